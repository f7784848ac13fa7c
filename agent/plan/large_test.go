package plan

import (
	"fmt"
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hnsdump"
	"github.com/winproxy/winproxy/agent/ownership"
)

// largeDump is the example host's dump with n foreign load balancers more (each on its own
// frontend, with one of n/2 foreign remote endpoints as backend), as a host with n Services that
// kube-proxy programmed would be: what a 65 MB dump of 200k load balancers holds.
func largeDump(t testing.TB, n int) *File {
	s, host := exampleHost(t.(*testing.T), true)
	ledger, _ := ownership.OpenLedger("")
	d := dumpOf(t.(*testing.T), s, host, ledger)
	nets := d.Networks[0].ID
	eps := max(n/2, 1)
	for i := range eps {
		d.Endpoints = append(d.Endpoints, hnsdump.Endpoint{Owner: hnsdump.OwnerForeign, Endpoint: hns.Endpoint{
			ID: fmt.Sprintf("E%07d-0000-0000-0000-000000000000", i), Name: fmt.Sprintf("pod-%d", i), NetworkID: nets,
			IPs: []netip.Addr{netip.AddrFrom4([4]byte{10, byte(200 + i>>16), byte(i >> 8), byte(i)})}, MAC: "00-15-5D-00-00-01", Remote: true}})
	}
	for i := range n {
		d.LoadBalancers = append(d.LoadBalancers, hnsdump.LoadBalancer{Owner: hnsdump.OwnerForeign, LoadBalancer: hns.LoadBalancer{
			ID:                 fmt.Sprintf("L%07d-0000-0000-0000-000000000000", i),
			FrontendVIPs:       []netip.Addr{netip.AddrFrom4([4]byte{10, 112, byte(i >> 8), byte(i)})},
			PortMapping:        hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 8080, ExternalPort: uint16(1000 + i>>16)},
			BackendEndpointIDs: []string{fmt.Sprintf("E%07d-0000-0000-0000-000000000000", i%eps)},
		}})
	}
	return exampleWithDump(t.(*testing.T), d)
}

// largeDumpHeapBound bounds the heap of a plan against a dump of 200,000 load balancers: the
// dump, its simulated host and the listing of each object are linear in its size. Before, every
// object's outcome scanned every call and every backend every endpoint.
const largeDumpHeapBound = 1 << 30

// A plan against a dump of 200,000 load balancers finishes with a bounded heap: nothing in it is
// quadratic in the size of the host.
func TestPlanAgainstALargeDump(t *testing.T) {
	const n = 200_000
	f := largeDump(t, n)
	var peak atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if h := int64(m.HeapAlloc); h > peak.Load() {
				peak.Store(h)
			}
		}
	}()
	start := time.Now()
	p, err := Build(f)
	took := time.Since(start)
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if len(p.HostLoadBalancers) < n {
		t.Errorf("%d host load balancers listed, want at least %d", len(p.HostLoadBalancers), n)
	}
	if peak.Load() > largeDumpHeapBound {
		t.Errorf("heap peak %d MiB, want at most %d MiB", peak.Load()>>20, largeDumpHeapBound>>20)
	}
	t.Logf("plan against %d load balancers: %v, heap peak %d MiB (bound %d MiB)", n, took.Round(time.Millisecond), peak.Load()>>20, largeDumpHeapBound>>20)
}
