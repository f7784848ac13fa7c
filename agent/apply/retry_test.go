package apply

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/winproxy/winproxy/agent/hns"
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

// steppingClient moves the clock forward on every endpoint it creates: a sync whose calls take
// time, as on a loaded node.
type steppingClient struct {
	hns.Client
	clk  *clocktesting.FakeClock
	step time.Duration
}

func (c steppingClient) CreateEndpoint(ctx context.Context, networkID string, ep hns.Endpoint) (hns.Endpoint, error) {
	c.clk.Step(c.step)
	return c.Client.CreateEndpoint(ctx, networkID, ep)
}

// An object deferred at planning stays failed when its retry falls due while the sync runs: the
// chaos suite's 30 % faults on a loaded machine once left a remote endpoint uncreated, its load
// balancer without that backend and the status Programmed, until the periodic full list 50 s later.
func TestDeferralFallingDueStaysFailed(t *testing.T) {
	h := newHost(t, sim.WS2022, false, false)
	h.app = New(steppingClient{Client: h.sim, clk: h.clk, step: time.Second}, h.ledger, WithClock(h.clk))
	h.service("svc1", "10.20.30.41", 0)
	h.endpoints("svc1", "192.168.1.5@node-1", "192.168.2.3@node-2")
	h.sim.FailOp(sim.OpCreateEndpoint, nil, 1)
	if r, _ := h.sync(); len(r.Failures) != 1 {
		t.Fatalf("first sync: failures %v, want the remote endpoint's", r.Failures)
	}
	// The next sync plans the new endpoint's create first and defers the failed one; the create
	// takes the second the retry waits for.
	h.service("svc2", "10.20.30.42", 0)
	h.endpoints("svc2", "192.168.2.2@node-2")
	r, c := h.sync()
	if c.Calls[sim.OpCreateEndpoint] != 1 {
		t.Fatalf("second sync: %d endpoint creates, want svc2's only", c.Calls[sim.OpCreateEndpoint])
	}
	if len(r.Failures) != 1 || !r.Failures[0].Deferred || r.Failures[0].Err == nil {
		t.Errorf("second sync: failures %v, want the deferred endpoint's, with its error", r.Failures)
	}
	if d, ok := h.app.NextRetry(); !ok || d != 0 {
		t.Errorf("second sync: NextRetry = %v, %v; want the deferred endpoint due now", d, ok)
	}
	if h.app.Settled() {
		t.Error("second sync: the applier says it settled with an endpoint not created")
	}
	r, c = h.sync()
	if c.Calls[sim.OpCreateEndpoint] != 1 || len(r.Failures) != 0 || r.LBsFailed != 0 {
		t.Errorf("third sync: %d endpoint creates, failures %v, result %+v; want the endpoint created", c.Calls[sim.OpCreateEndpoint], r.Failures, r)
	}
}
