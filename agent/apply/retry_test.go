package apply

import (
	"testing"
	"time"

	"github.com/winproxy/winproxy/agent/hns/sim"
)

// A failed object tells the agent when to sync again: within seconds, capped well below a sync
// period, so a fault that is gone costs seconds of convergence.
func TestNextRetryIsDueWithinSeconds(t *testing.T) {
	h := newHost(t, sim.WS2022, false, false)
	workload(h)
	if _, ok := h.app.NextRetry(); ok {
		t.Fatal("a new applier has a retry pending")
	}
	h.sim.FailOp(sim.OpCreateLoadBalancer, nil, -1)
	h.sync()
	if d, ok := h.app.NextRetry(); !ok || d != time.Second {
		t.Fatalf("after one failure NextRetry = %v, %v; want 1s", d, ok)
	}
	for range 10 {
		h.clk.Step(time.Minute)
		h.sync()
	}
	if d, ok := h.app.NextRetry(); !ok || d > 10*time.Second {
		t.Errorf("after many failures NextRetry = %v, %v; want at most 10s", d, ok)
	}
	h.sim.ClearFaults()
	h.clk.Step(10 * time.Second)
	if r, _ := h.sync(); r.LBsFailed != 0 {
		t.Fatalf("not recovered: %+v", r)
	}
	if d, ok := h.app.NextRetry(); ok {
		t.Errorf("NextRetry = %v after recovery, want none", d)
	}
}
