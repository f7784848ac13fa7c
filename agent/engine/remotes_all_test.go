package engine_test

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/engine/enginetest"
)

// TestRemoteEndpointsAllInBatches: an Incremental's All makes the backends' remote endpoints in
// batches; across several batches it yields every desired one once, as Get and Compute have it,
// as many as Len says, and it stops when told to.
func TestRemoteEndpointsAllInBatches(t *testing.T) {
	cl := enginetest.Spread(100, 20, 30) // about a thousand remote backends: several batches
	view := cl.View(ws2022)
	ec := cl.Incremental()
	ec.SetNode(cl.NodeName, cl.Config, nil, view)
	got := ec.Desired().RemoteEndpoints
	want := engine.Compute(cl.Input(view)).RemoteEndpoints
	all := engine.RemoteEndpointMap{}
	for ip, re := range got.All() {
		if _, twice := all[ip]; twice {
			t.Fatalf("All yielded %v twice", ip)
		}
		all[ip] = re
		if fromGet, _ := got.Get(ip); fromGet != re || !got.Has(ip) {
			t.Errorf("All yielded %+v for %v, Get has %+v (Has: %v)", re, ip, fromGet, got.Has(ip))
		}
	}
	if len(all) < 600 || len(all) != got.Len() {
		t.Fatalf("All yielded %d remote endpoints, Len says %d (want several batches' worth)", len(all), got.Len())
	}
	if diff := cmp.Diff(want, all, cmpopts.EquateComparable(netip.Addr{})); diff != "" {
		t.Errorf("All differs from Compute (-Compute +All):\n%s", diff)
	}
	for _, stop := range []int{1, 255, 256, 257, 700} {
		n := 0
		for range got.All() {
			if n++; n == stop {
				break
			}
		}
		if n != stop {
			t.Errorf("asked to stop after %d, All yielded %d", stop, n)
		}
	}
}
