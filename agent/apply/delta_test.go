package apply

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
)

// deltaHost is a host whose engine is incremental and whose syncs run as
// the agent's do (agent/daemon program): a sync a change triggered programs
// engine.Changes from the model, and falls back to a full Apply from Recall,
// or from a list when there is nothing to recall.
type deltaHost struct {
	*host
	inc *engine.Incremental
	ctx context.Context
	// deltas counts the event syncs that ApplyChanges did alone.
	deltas int
}

func newDeltaHost(t *testing.T, p sim.Profile, overlay bool) *deltaHost {
	t.Helper()
	return &deltaHost{host: newHost(t, p, overlay, false), inc: engine.NewIncremental(), ctx: context.Background()}
}

// feed gives the engine the named services and slices as they are now,
// deleting those gone.
func (h *deltaHost) feed(names ...string) {
	for _, name := range names {
		if svc, ok := h.svcs[name]; ok {
			h.inc.SetService(svc)
		} else {
			h.inc.DeleteService("ns", name)
		}
		if s, ok := h.slices[name]; ok {
			h.inc.SetEndpointSlice(s)
		} else {
			h.inc.DeleteEndpointSlice("ns", name+"-x")
		}
	}
}

func (h *deltaHost) feedAll() {
	var names []string
	for name := range h.svcs {
		names = append(names, name)
	}
	h.feed(names...)
}

// listed runs a full sync from a list, as the agent's periodic one.
func (h *deltaHost) listed() (Result, error) {
	h.t.Helper()
	o, err := h.app.Observe(h.ctx, netName, hostMAC)
	if err != nil {
		return Result{}, err
	}
	h.inc.SetNode(nodeName, h.cfg, nil, nil, o.View)
	return h.app.Apply(h.ctx, o, h.inc.Desired())
}

// settle runs full syncs until one leaves HNS as wanted and the engine's
// node context as it was (the first creates the source-VIP endpoint, a
// change of the node for the next).
func (h *deltaHost) settle() {
	h.t.Helper()
	for range 4 {
		r, err := h.listed()
		if err != nil {
			h.t.Fatalf("full sync: %v", err)
		}
		if h.app.settled && !h.inc.Changes().Everything {
			return
		}
		if len(r.Failures) > 0 {
			h.clk.Step(10 * time.Second)
		}
	}
	h.t.Fatal("HNS not settled after 4 full syncs")
}

// event is a sync a change triggered, as the agent's: done says whether
// ApplyChanges did it alone.
func (h *deltaHost) event() (r Result, done bool, err error) {
	h.t.Helper()
	v, ok := h.app.LocalView(h.ctx, netName, hostMAC)
	if !ok {
		r, err = h.listed()
		return r, false, err
	}
	h.inc.SetNode(nodeName, h.cfg, nil, nil, v)
	d := h.inc.Desired()
	if r, done, err = h.app.ApplyChanges(h.ctx, d, h.inc.Changes()); done {
		if err == nil {
			h.deltas++
		}
		return r, done, err
	}
	o, ok := h.app.Recall(h.ctx, netName, hostMAC)
	if !ok {
		r, err = h.listed()
		return r, false, err
	}
	r, err = h.app.Apply(h.ctx, o, d)
	return r, false, err
}

// converged fails unless the model is what HNS lists and a full sync from
// a list, with the engine's pure function, has nothing to write: HNS is as
// wanted, nothing of the agent's is left over.
func (h *deltaHost) converged(step string) Result {
	h.t.Helper()
	if _, ok := h.app.Recall(h.ctx, netName, hostMAC); ok {
		h.sameAsListed()
	}
	o, err := h.app.Observe(h.ctx, netName, hostMAC)
	if err != nil {
		h.t.Fatalf("%s: %v", step, err)
	}
	h.sim.Reset()
	full, err := h.app.Apply(h.ctx, o, engine.Compute(h.input(o.View)))
	if c := h.sim.Counts(); err != nil || c.Writes != 0 || len(full.Failures) > 0 {
		h.t.Errorf("%s: the full sync after it wrote %v (%v), failures %v", step, writes(c), err, full.Failures)
	}
	if n := len(h.ledger.IDs()); n != full.LBsDesired {
		h.t.Errorf("%s: %d load balancers recorded, %d desired", step, n, full.LBsDesired)
	}
	return full
}

// TestModifyAfterDeltasKeepsModifying: a load balancer changed by several event syncs in a
// row, around the agent's periodic full syncs, is modified each time. The
// check for a modify HNS accepted without carrying it out (k/k #131466)
// compares what HNS has with the last modify asked, not with one that a
// later sync's own modify overtook.
func TestModifyAfterDeltasKeepsModifying(t *testing.T) {
	h := newDeltaHost(t, sim.WS2025, true)
	workload(h.host)
	h.feedAll()
	h.settle()
	eps := [][]string{
		{"192.168.2.3@node-2", "192.168.2.4@node-2", "192.168.1.5@node-1"},
		{"192.168.2.3@node-2", "192.168.2.4@node-2"},
		{"192.168.2.3@node-2", "192.168.2.4@node-2", "192.168.1.6@node-1"},
		{"192.168.2.3@node-2"},
	}
	for i, e := range eps {
		h.endpoints("svc2", e...)
		h.feed("svc2")
		h.sim.Reset()
		if _, done, err := h.event(); err != nil || !done {
			t.Fatalf("change %d: ApplyChanges = %v, %v; want it done", i, done, err)
		}
		if c := h.sim.Counts(); c.Calls[sim.OpModifyLoadBalancer] != 1 || c.Calls[sim.OpCreateLoadBalancer] != 0 {
			t.Errorf("change %d: writes %v, want the load balancer modified", i, writes(c))
		}
		if i == 0 {
			// The periodic full sync, between two event syncs.
			if _, err := h.listed(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if h.app.noModify {
		t.Error("modify given up on an HNS that carries it out")
	}
	h.converged("after the changes")
}

// stillCreates is an HNS that carries out an endpoint create it answers
// with a timeout (the agent's HNS call timeout struck first).
type stillCreates struct {
	*sim.Sim
	timeouts int
}

func (s *stillCreates) CreateEndpoint(ctx context.Context, networkID string, ep hns.Endpoint) (hns.Endpoint, error) {
	got, err := s.Sim.CreateEndpoint(ctx, networkID, ep)
	if err == nil && s.timeouts > 0 {
		s.timeouts--
		return hns.Endpoint{}, hns.ErrTimeout
	}
	return got, err
}

// A remote endpoint whose create failed but that a later list finds (the
// create was carried out after all, or another holds the address) is
// used, and its backoff ends with it: otherwise the stale retry keeps every
// later sync off ApplyChanges for as long as the endpoint is wanted.
func TestResolvedEndpointEndsItsRetry(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(h *deltaHost)
	}{
		{"create carried out despite a timeout", func(h *deltaHost) {
			h.app = New(&stillCreates{Sim: h.sim, timeouts: 1}, h.ledger, WithClock(h.clk))
		}},
		{"a foreign endpoint holds the address", func(h *deltaHost) {
			n, err := h.sim.GetNetworkByName(h.ctx, netName)
			if err != nil {
				h.t.Fatal(err)
			}
			if _, err := h.sim.CreateEndpoint(h.ctx, n.ID, hns.Endpoint{Name: "kube-proxy-left-it", IPs: []netip.Addr{ip("192.168.2.9")},
				MAC: "02-11-C0-A8-02-09", Remote: true, ProviderAddress: ip("10.0.0.3")}); err != nil {
				h.t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newDeltaHost(t, sim.WS2022, true)
			workload(h.host)
			h.feedAll()
			h.settle()
			tc.setup(h)
			h.settle()
			h.endpoints("svc2", "192.168.2.3@node-2", "192.168.2.4@node-2", "192.168.2.9@node-2")
			h.feed("svc2")
			if _, done, err := h.event(); err != nil || done {
				t.Fatalf("ApplyChanges = %v, %v; want a fall-back to a full sync", done, err)
			}
			h.converged("after the failed create")
			if len(h.app.retries) != 0 {
				t.Errorf("retries %v kept for an endpoint in use", h.app.retries)
			}
			h.endpoints("svc2", "192.168.2.3@node-2", "192.168.2.9@node-2")
			h.feed("svc2")
			if _, done, err := h.event(); err != nil || !done {
				t.Errorf("next change: ApplyChanges = %v, %v; want it done", done, err)
			}
			h.converged("after the next change")
		})
	}
}
