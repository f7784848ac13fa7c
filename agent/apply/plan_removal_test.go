package apply

import (
	"context"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/agent/ownership"
)

// removalWorld is what winproxy-agent cleanup's planner reads: what HNS
// lists and what the ledger records.
type removalWorld struct {
	lbs      []hns.LoadBalancer
	eps      []hns.Endpoint
	recorded []hns.LoadBalancer // the content the ledger proves, by ID
}

// plan runs both phases of a removal against w without executing anything.
func (w removalWorld) plan(t *testing.T) []string {
	t.Helper()
	ledger, err := ownership.OpenLedger("")
	if err != nil {
		t.Fatal(err)
	}
	owned := ownership.NewOwned(sim.MustNew(), ledger)
	for _, lb := range w.recorded {
		if err := owned.Adopt(lb); err != nil {
			t.Fatal(err)
		}
	}
	ops, inUse := planRemoveLoadBalancers(w.lbs, owned)
	ops = append(ops, planRemoveEndpoints(w.eps, owned, inUse)...)
	var out []string
	for _, o := range ops {
		out = append(out, o.String())
	}
	return out
}

// TestRemovalRules: the rules of winproxy-agent cleanup, one row each.
func TestRemovalRules(t *testing.T) {
	changed := hnsLB("LB1", "OTHER")
	for _, tc := range []struct {
		rule  string
		world removalWorld
		want  []string
	}{
		{"a load balancer that proves to be the agent's is deleted",
			removalWorld{lbs: []hns.LoadBalancer{hnsLB("LB1", "POD")}, recorded: []hns.LoadBalancer{hnsLB("LB1", "POD")}},
			[]string{"DeleteLoadBalancer load balancer LB1 RemovalRequested"}},
		{"a recorded load balancer that no longer holds what the agent wrote is left and listed",
			removalWorld{lbs: []hns.LoadBalancer{changed}, recorded: []hns.LoadBalancer{hnsLB("LB1", "POD")}},
			[]string{"Leave load balancer LB1 LoadBalancerNotOwned"}},
		{"a foreign load balancer is left alone",
			removalWorld{lbs: []hns.LoadBalancer{hnsLB("KUBEPROXY", "POD")}},
			nil},
		{"an endpoint of the agent's is deleted, whatever its network",
			removalWorld{eps: []hns.Endpoint{ourRemote("GONE", remoteIP, "10.0.0.3")}},
			[]string{"DeleteEndpoint endpoint GONE RemovalRequested"}},
		{"an endpoint of the agent's used only by a load balancer deleted first is deleted",
			removalWorld{lbs: []hns.LoadBalancer{hnsLB("LB1", "OURS")}, recorded: []hns.LoadBalancer{hnsLB("LB1", "OURS")},
				eps: []hns.Endpoint{ourRemote("OURS", remoteIP, "10.0.0.3")}},
			[]string{"DeleteLoadBalancer load balancer LB1 RemovalRequested", "DeleteEndpoint endpoint OURS RemovalRequested"}},
		{"an endpoint of the agent's that a foreign load balancer uses is left and listed",
			removalWorld{lbs: []hns.LoadBalancer{hnsLB("KUBEPROXY", "USED")}, eps: []hns.Endpoint{ourRemote("USED", remoteIP, "10.0.0.3")}},
			[]string{"Leave endpoint USED EndpointInUse"}},
		{"an endpoint of the agent's that a load balancer left unproven uses is left and listed",
			removalWorld{lbs: []hns.LoadBalancer{hnsLB("LB1", "USED")}, recorded: []hns.LoadBalancer{hnsLB("LB1", "POD")},
				eps: []hns.Endpoint{ourRemote("USED", remoteIP, "10.0.0.3")}},
			[]string{"Leave load balancer LB1 LoadBalancerNotOwned", "Leave endpoint USED EndpointInUse"}},
		{"an endpoint someone else created is left alone",
			removalWorld{eps: []hns.Endpoint{pod, {ID: "CNI", Name: "cni", IPs: []netip.Addr{remoteIP}, Remote: true}}},
			nil},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.world.plan(t)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRemoveSettlesIntents: a load balancer created just before the agent
// was killed, recorded only as an intent, is removed too; what Remove
// deletes is gone from HNS and what it leaves is reported.
func TestRemoveSettlesIntents(t *testing.T) {
	ctx := context.Background()
	s := sim.MustNew()
	n, err := s.AddNetwork(hns.Network{Name: "cbr0", Type: hns.NetworkTypeL2Bridge})
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := ownership.OpenLedger("")
	if err != nil {
		t.Fatal(err)
	}
	owned := ownership.NewOwned(s, ledger)
	ep, err := owned.CreateEndpoint(ctx, n.ID, hns.Endpoint{Name: hns.OwnedEndpointName(remoteIP), IPs: []netip.Addr{remoteIP}, Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	// Created, but the agent was killed before recording its ID: only the
	// intent is in the ledger.
	func() {
		defer func() { _ = recover() }()
		_, _ = ownership.NewOwned(killedAfterCreate{s}, ledger).CreateLoadBalancer(ctx, hnsLB("", ep.ID))
	}()
	lbs, _ := s.ListLoadBalancers(ctx)
	if len(lbs) != 1 || ledger.Has(lbs[0].ID) {
		t.Fatalf("listed %v; want one load balancer the ledger does not record yet", lbs)
	}
	lb := lbs[0]
	r, err := Remove(ctx, s, owned)
	if err != nil {
		t.Fatal(err)
	}
	if r.LoadBalancers != 1 || r.Endpoints != 1 || len(r.Unproven)+len(r.InUse) != 0 {
		t.Errorf("removed %+v, want load balancer %s and endpoint %s and nothing left", r, lb.ID, ep.ID)
	}
	st, _ := s.Snapshot()
	if len(st.LoadBalancers)+len(st.Endpoints) != 0 {
		t.Errorf("left in HNS: %v, %v", st.LoadBalancers, st.Endpoints)
	}
}

// killedAfterCreate stands for an agent killed after HNS created a load
// balancer and before the ledger recorded it.
type killedAfterCreate struct{ *sim.Sim }

func (k killedAfterCreate) CreateLoadBalancer(ctx context.Context, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	_, _ = k.Sim.CreateLoadBalancer(ctx, lb)
	panic("killed")
}
