package apply

import (
	"cmp"
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/agent/syncmode"
)

// recalledSync runs a sync the way the agent runs one a change triggered:
// from Recall, not Observe.
func (h *host) recalledSync() (Result, sim.Counts) {
	h.t.Helper()
	h.sim.Reset()
	o, ok := h.app.Recall(context.Background(), netName, hostMAC)
	if !ok {
		h.t.Fatal("nothing to recall")
	}
	r, err := h.app.Apply(context.Background(), o, h.desired(o.View))
	if err != nil {
		h.t.Fatalf("sync: %v", err)
	}
	return r, h.sim.Counts()
}

// sameAsListed fails unless Recall returns exactly what HNS would list.
func (h *host) sameAsListed() {
	h.t.Helper()
	o, ok := h.app.Recall(context.Background(), netName, hostMAC)
	if !ok {
		h.t.Fatal("nothing to recall")
	}
	net, err := h.sim.GetNetworkByName(context.Background(), netName)
	if err != nil {
		h.t.Fatal(err)
	}
	eps, err := h.sim.ListEndpoints(context.Background(), net.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	lbs, err := h.sim.ListLoadBalancers(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	addrs := cmpopts.EquateComparable(netip.Addr{})
	byEPID := func(a, b hns.Endpoint) int { return cmp.Compare(a.ID, b.ID) }
	byLBID := func(a, b hns.LoadBalancer) int { return cmp.Compare(a.ID, b.ID) }
	if diff := gocmp.Diff(slices.SortedFunc(slices.Values(eps), byEPID), slices.SortedFunc(slices.Values(o.View.Endpoints), byEPID), addrs); diff != "" {
		h.t.Errorf("recalled endpoints differ from HNS's (-listed +recalled):\n%s", diff)
	}
	if diff := gocmp.Diff(slices.SortedFunc(slices.Values(lbs), byLBID), slices.SortedFunc(slices.Values(o.LoadBalancers), byLBID), addrs); diff != "" {
		h.t.Errorf("recalled load balancers differ from HNS's (-listed +recalled):\n%s", diff)
	}
	// The remote endpoints the agent created, for backends (the MAC conjured from the address) and
	// for service VIPs (the host's MAC), are all held in brief: the memory the model saves is real.
	ours := 0
	for _, ep := range eps {
		if ep.Remote && hns.HasOwnedName(ep) {
			ours++
		}
	}
	if got := h.app.model.briefs.len(); got != ours {
		h.t.Errorf("the model holds %d remote endpoints in brief, want all %d of the agent's", got, ours)
	}
}

// TestRecalledSyncsListNothing: syncs a change triggered read only the
// network, write what the change needs, and leave the model equal to what
// HNS lists; a full sync after them has nothing left to do.
func TestRecalledSyncsListNothing(t *testing.T) {
	for _, p := range []sim.Profile{sim.WS2019, sim.WS2022, sim.WS2025} {
		t.Run(p.Name, func(t *testing.T) {
			h := newHost(t, p, true, false)
			workload(h)
			h.sync()
			h.sameAsListed()
			changes := []struct {
				name   string
				change func()
			}{
				{"remote endpoint added", func() { h.endpoints("svc2", "192.168.2.3@node-2", "192.168.2.4@node-2", "192.168.2.9@node-2") }},
				{"remote endpoint removed", func() { h.endpoints("svc2", "192.168.2.3@node-2", "192.168.2.4@node-2") }},
				{"service added", func() {
					h.service("svc4", "10.20.30.44", 30004)
					h.endpoints("svc4", "192.168.1.5@node-1", "192.168.2.7@node-2")
				}},
				{"local endpoint added", func() { h.endpoints("svc3", "192.168.1.6@node-1", "192.168.1.5@node-1") }},
				{"service deleted", func() { delete(h.svcs, "svc1"); delete(h.slices, "svc1") }},
				{"nothing", func() {}},
			}
			for _, c := range changes {
				c.change()
				r, counts := h.recalledSync()
				if counts.Calls[sim.OpListEndpoints]+counts.Calls[sim.OpListLoadBalancers] != 0 || counts.Reads != 1 {
					t.Errorf("%s: %d reads %v, want only the network's", c.name, counts.Reads, counts.Calls)
				}
				if len(r.Failures) > 0 {
					t.Errorf("%s: failures %v", c.name, r.Failures)
				}
				h.sameAsListed()
				if _, full := h.sync(); full.Writes != 0 {
					t.Errorf("%s: the full sync after it wrote %v", c.name, writes(full))
				}
			}
		})
	}
}

// TestRecallAfterAFailedWrite: a write that fails leaves HNS in a state only
// a list tells, so there is nothing to recall until the next Observe.
func TestRecallAfterAFailedWrite(t *testing.T) {
	h := newHost(t, sim.WS2022, true, false)
	workload(h)
	h.sync()
	h.sim.FailOp(sim.OpCreateLoadBalancer, hns.ErrTimeout, 1)
	h.service("svc4", "10.20.30.44", 0)
	h.endpoints("svc4", "192.168.1.5@node-1")
	h.recalledSync()
	if _, ok := h.app.Recall(context.Background(), netName, hostMAC); ok {
		t.Fatal("recalled after a failed write")
	}
	h.sync()
	h.sameAsListed()
}

// TestRecallNeedsTheListedNetwork: a network the CNI recreated is not the
// one the model describes.
func TestRecallNeedsTheListedNetwork(t *testing.T) {
	h := newHost(t, sim.WS2022, false, false)
	workload(h)
	h.sync()
	if err := h.sim.RemoveNetwork(netName); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sim.AddNetwork(hns.Network{Name: netName, Type: hns.NetworkTypeL2Bridge}); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.app.Recall(context.Background(), netName, hostMAC); ok {
		t.Fatal("recalled the endpoints of a network that is gone")
	}
}

// TestVerifyFindsObjectsThatCameOrWent: two ID enumerations tell whether
// the model still holds, after the applier's own writes too; an object
// deleted or created behind its back makes it false.
func TestVerifyFindsObjectsThatCameOrWent(t *testing.T) {
	h := newHost(t, sim.WS2022, true, false)
	workload(h)
	h.sync()
	verify := func(want bool, when string) {
		t.Helper()
		h.sim.Reset()
		got, err := h.app.Verify(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: Verify() = %v, want %v", when, got, want)
		}
		if c := h.sim.Counts(); c.Reads != 2 || c.HCN != 2 {
			t.Errorf("%s: %d reads costing %d HCN calls (%v), want the 2 ID enumerations", when, c.Reads, c.HCN, c.Calls)
		}
	}
	verify(true, "after a full sync")
	h.endpoints("svc2", "192.168.2.3@node-2", "192.168.2.4@node-2", "192.168.2.9@node-2")
	h.recalledSync()
	verify(true, "after the agent's own writes")

	if err := h.sim.RemoveLoadBalancer(h.lbIDByVIP("10.20.30.42", 80)); err != nil {
		t.Fatal(err)
	}
	verify(false, "a load balancer deleted behind the agent's back")
	h.sync()
	verify(true, "after the repair")

	if _, err := h.sim.AddLocalEndpoint(netName, "pod-192.168.1.7", ip("192.168.1.7")); err != nil {
		t.Fatal(err)
	}
	verify(false, "a pod's endpoint the CNI created")
}

// TestApplyChangesProgramsOnlyTheChange: after a full sync, each change
// fed to the incremental engine is programmed from engine.Changes alone:
// one read (the network), the writes the change needs, HNS left as a full
// sync wants it.
func TestApplyChangesProgramsOnlyTheChange(t *testing.T) {
	for _, p := range []sim.Profile{sim.WS2019, sim.WS2022, sim.WS2025} {
		t.Run(p.Name, func(t *testing.T) {
			h := newHost(t, p, true, false)
			workload(h)
			inc := engine.NewIncremental()
			for name := range h.svcs {
				inc.SetService(h.svcs[name])
				inc.SetEndpointSlice(h.slices[name])
			}
			ctx := context.Background()
			o, err := h.app.Observe(ctx, netName, hostMAC)
			if err != nil {
				t.Fatal(err)
			}
			inc.SetNode(nodeName, h.cfg, nil, o.View)
			if _, err := h.app.Apply(ctx, o, inc.Desired()); err != nil {
				t.Fatal(err)
			}
			// The first sync created the source-VIP endpoint, a local one:
			// the engine sees it in the next view, a change of the node, which
			// the agent's next sync programs in full from what it recalls.
			sync := &Sync{Applier: h.app, Network: netName, HostMAC: hostMAC, LastChecked: h.clk.Now(), LastListed: h.clk.Now(),
				Compute: func(v engine.HNSView) (*engine.Desired, engine.Changes) {
					inc.SetNode(nodeName, h.cfg, nil, v)
					return inc.Desired(), inc.Changes()
				}}
			if out := sync.Run(ctx, h.clk.Now(), time.Minute); out.Err != nil || out.Decision != (syncmode.Decision{Step: syncmode.Recall, Reason: syncmode.NodeContextChanged}) {
				t.Fatalf("the sync after the source-VIP endpoint appeared: %v, %v; want a full Apply from what the applier recalls", out.Decision, out.Err)
			}
			set := func(names ...string) func() {
				return func() {
					for _, name := range names {
						if svc, ok := h.svcs[name]; ok {
							inc.SetService(svc)
							inc.SetEndpointSlice(h.slices[name])
						} else {
							inc.DeleteService("ns", name)
							inc.DeleteEndpointSlice("ns", name)
						}
					}
				}
			}
			for _, c := range []struct {
				name   string
				change func()
				writes int
			}{
				{"remote endpoint added", func() {
					h.endpoints("svc2", "192.168.2.3@node-2", "192.168.2.4@node-2", "192.168.2.9@node-2")
					set("svc2")()
				}, -1},
				{"remote endpoint removed", func() { h.endpoints("svc2", "192.168.2.3@node-2", "192.168.2.4@node-2"); set("svc2")() }, -1},
				{"service added", func() {
					h.service("svc4", "10.20.30.44", 30004)
					h.endpoints("svc4", "192.168.1.5@node-1", "192.168.2.7@node-2")
					set("svc4")()
				}, -1},
				{"service deleted", func() { delete(h.svcs, "svc1"); delete(h.slices, "svc1"); set("svc1")() }, -1},
				{"nothing", set("svc3"), 0},
			} {
				c.change()
				h.sim.Reset()
				v, ok := h.app.LocalView(ctx, netName, hostMAC, false)
				if !ok {
					t.Fatalf("%s: no view to program from", c.name)
				}
				inc.SetNode(nodeName, h.cfg, nil, v)
				r, ok, err := h.app.ApplyChanges(ctx, inc.Desired(), inc.Changes())
				if err != nil || !ok {
					t.Fatalf("%s: ApplyChanges = %v, %v; want it done", c.name, ok, err)
				}
				counts := h.sim.Counts()
				if counts.Reads != 0 {
					t.Errorf("%s: %d reads (%v), want none (the network as last read)", c.name, counts.Reads, counts.Calls)
				}
				if c.writes >= 0 && counts.Writes != c.writes {
					t.Errorf("%s: %d writes, want %d", c.name, counts.Writes, c.writes)
				}
				if counts.Writes == 0 && c.writes < 0 {
					t.Errorf("%s: nothing written", c.name)
				}
				h.sameAsListed()
				o, err := h.app.Observe(ctx, netName, hostMAC)
				if err != nil {
					t.Fatal(err)
				}
				h.sim.Reset()
				full, err := h.app.Apply(ctx, o, engine.Compute(h.input(o.View)))
				if err != nil || h.sim.Counts().Writes != 0 {
					t.Errorf("%s: the full sync after it wrote %v (%v)", c.name, writes(h.sim.Counts()), err)
				}
				if r.RemoteEndpoints != full.RemoteEndpoints || r.LBsProgrammed != full.LBsProgrammed {
					t.Errorf("%s: counted %d remote endpoints and %d load balancers, a full sync %d and %d", c.name, r.RemoteEndpoints, r.LBsProgrammed, full.RemoteEndpoints, full.LBsProgrammed)
				}
			}
		})
	}
}

// TestRereadKeepsTheListedNetworkID: a network read again takes its new
// routes, and keeps the ID as listed even when HNS spells it in another
// case, so that the endpoints created after it are held in brief and carry
// the same network ID as those listed.
func TestRereadKeepsTheListedNetworkID(t *testing.T) {
	m := &model{}
	m.listed(hns.Network{ID: "0AB1C2D3-0000-4000-8000-0000000000AA", Name: netName}, nil, nil)
	route := hns.RemoteSubnetRoute{DestinationPrefix: netip.MustParsePrefix("10.244.7.0/24"), ProviderAddress: netip.MustParseAddr("172.18.0.9")}
	got := m.reread(hns.Network{ID: "0ab1c2d3-0000-4000-8000-0000000000aa", Name: netName, RemoteSubnetRoutes: []hns.RemoteSubnetRoute{route}})
	if got.ID != "0AB1C2D3-0000-4000-8000-0000000000AA" || len(got.RemoteSubnetRoutes) != 1 {
		t.Fatalf("reread gives %+v, want the listed ID with the new route", got)
	}
	ip := netip.MustParseAddr("10.244.7.5")
	ep := hns.Endpoint{ID: "0AB1C2D3-0000-4000-8000-000000000001", Name: hns.OwnedEndpointName(ip), IPs: []netip.Addr{ip},
		MAC: hns.ConjureMAC(ip), Remote: true, ProviderAddress: route.ProviderAddress}
	created := ep
	created.NetworkID = "0ab1c2d3-0000-4000-8000-0000000000aa" // as HNS might answer
	m.keep(m.canonical(created, ep))
	if m.briefs.len() != 1 {
		t.Fatalf("the created endpoint is not held in brief (%d briefs, %d whole)", m.briefs.len(), len(m.eps))
	}
	_, eps, _, _ := m.recall()
	if len(eps) != 1 || eps[0].NetworkID != got.ID {
		t.Errorf("recalled %+v, want one endpoint of network %s", eps, got.ID)
	}
}
