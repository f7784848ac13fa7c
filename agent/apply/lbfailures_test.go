package apply

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// lbFailure is an LBFailure as the tests compare it: the write, the load
// balancer's family and kind, and the HNS error's reason.
type lbFailure struct {
	Op     hns.Op
	Family v1alpha1.IPFamily
	Kind   engine.Kind
	Reason string
}

func lbFailures(r Result) []lbFailure {
	var out []lbFailure
	for _, f := range r.LBFailures {
		out = append(out, lbFailure{f.Op, f.Key.Family.IPFamily(), f.Key.Kind, hns.Reason(f.Err)})
	}
	return out
}

// Winkernel's failure counters count the load-balancer writes HNS refused, by the write and the
// load balancer's family and kind: a failed create, modify and delete each once; a modify HNS does
// not implement (the applier falls back, as winkernel does) and a delete of a load balancer that
// is gone already are not failures.
func TestLBFailuresAreTheRefusedWrites(t *testing.T) {
	h := newHost(t, sim.WS2025, false, false)
	h.service("svc1", "10.20.30.41", 30001)
	h.endpoints("svc1", "192.168.1.5@node-1")
	h.sim.FailOp(sim.OpCreateLoadBalancer, hns.ErrInvalidIP, 1)
	r, _ := h.sync()
	want := []lbFailure{{hns.OpCreateLoadBalancer, v1alpha1.IPv4, engine.KindClusterIP, "invalid_ip"}}
	if diff := cmp.Diff(want, lbFailures(r)); diff != "" {
		t.Fatalf("first sync (-want +got):\n%s", diff)
	}
	h.clk.Step(time.Minute)
	if r, _ = h.sync(); len(r.LBFailures) != 0 || r.LBsFailed != 0 {
		t.Fatalf("the retry failed: %+v", r)
	}

	h.sim.FailOp(sim.OpModifyLoadBalancer, errors.New("injected"), 1)
	h.endpoints("svc1", "192.168.1.5@node-1", "192.168.1.6@node-1")
	r, _ = h.sync()
	modify := lbFailure{hns.OpModifyLoadBalancer, v1alpha1.IPv4, engine.KindClusterIP, "other"}
	if r.LBFailures == nil || lbFailures(r)[0] != modify {
		t.Fatalf("a failed modify: %v, want %v first", lbFailures(r), modify)
	}
	h.clk.Step(time.Minute)
	h.sync()

	h.sim.FailOp(sim.OpModifyLoadBalancer, hns.ErrNotImplemented, 1)
	h.endpoints("svc1", "192.168.1.6@node-1")
	if r, _ = h.sync(); len(r.LBFailures) != 0 {
		t.Fatalf("a modify HNS does not implement counted: %v", lbFailures(r))
	}

	// The service goes: its load balancers are deleted, and one delete fails.
	delete(h.svcs, "svc1")
	delete(h.slices, "svc1")
	h.sim.FailOp(sim.OpDeleteLoadBalancer, errors.New("injected"), 1)
	r, _ = h.sync()
	if diff := cmp.Diff(1, len(r.LBFailures)); diff != "" {
		t.Fatalf("deletes: %v, want one failure", lbFailures(r))
	}
	got := lbFailures(r)[0]
	if got.Op != hns.OpDeleteLoadBalancer || got.Family != v1alpha1.IPv4 || got.Kind == 0 {
		t.Errorf("a failed delete of an unwanted load balancer: %+v, want a delete with its family and kind", got)
	}
	if r, _ = h.sync(); len(r.LBFailures) != 0 || len(h.snapshot().LoadBalancers) != 0 {
		t.Errorf("the delete was not made again, or failed: %v, %d load balancers left", lbFailures(r), len(h.snapshot().LoadBalancers))
	}
}
