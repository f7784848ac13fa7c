package apply

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/agent/ownership"
)

// planWorld is what the planner reads: what HNS lists, what is wanted and
// the applier's memory (set by prepare). The planner's rules are tested
// one row each: the row's world makes that one rule fire.
type planWorld struct {
	eps     []hns.Endpoint
	lbs     []hns.LoadBalancer
	d       *engine.Desired
	noMod   bool // HNS without ModifyLoadBalancer
	first   bool // the first sync of a start (firstPhases); else a later one
	prepare func(a *Applier, w *planWorld)
}

// The objects of the rows: a local pod, a remote pod's address, and a
// ClusterIP whose backend is the local pod.
var (
	podIP    = netip.MustParseAddr("192.168.1.5")
	remoteIP = netip.MustParseAddr("192.168.2.7")
	svipIP   = netip.MustParseAddr("192.168.1.2")
	pod      = hns.Endpoint{ID: "POD", Name: "pod", IPs: []netip.Addr{podIP}}
	svcKey   = engine.LBKey{Family: engine.FamilyIPv4, Kind: engine.KindClusterIP, Service: "ns/svc", Port: "http",
		VIP: netip.MustParseAddr("10.96.0.10"), Protocol: 6, ExternalPort: 80}
	wantedLB = engine.LoadBalancer{Key: svcKey, InternalPort: 8080,
		Backends: []engine.Backend{{IP: podIP, Local: true, EndpointID: "POD"}}}
	remote = engine.RemoteEndpoint{IP: remoteIP, MAC: "02-11-C0-A8-02-07", ProviderAddress: netip.MustParseAddr("10.0.0.3")}
)

// hnsLB is wantedLB as HNS holds it, with backends.
func hnsLB(id string, backends ...string) hns.LoadBalancer {
	return hns.LoadBalancer{ID: id, FrontendVIPs: []netip.Addr{svcKey.VIP},
		PortMapping:        hns.PortMapping{Protocol: 6, InternalPort: 8080, ExternalPort: 80},
		BackendEndpointIDs: backends}
}

// ourRemote is a remote endpoint the agent created for ip.
func ourRemote(id string, ip netip.Addr, pa string) hns.Endpoint {
	return hns.Endpoint{ID: id, Name: hns.OwnedEndpointName(ip), IPs: []netip.Addr{ip}, Remote: true,
		MAC: remote.MAC, ProviderAddress: netip.MustParseAddr(pa)}
}

func desired(lbs ...engine.LoadBalancer) *engine.Desired {
	d := &engine.Desired{LoadBalancers: map[engine.LBKey]engine.LoadBalancer{}, RemoteEndpoints: engine.RemoteEndpointMap{}}
	d.Effective.Programmable = true
	d.Effective.SourceVIP.Address = svipIP.String()
	for _, lb := range lbs {
		d.LoadBalancers[lb.Key] = lb
	}
	return d
}

func withRemote(d *engine.Desired, eps ...engine.RemoteEndpoint) *engine.Desired {
	for _, ep := range eps {
		d.RemoteEndpoints.(engine.RemoteEndpointMap)[ep.IP] = ep
	}
	return d
}

// withSourceVIPEndpoint asks for the overlay source-VIP endpoint.
func withSourceVIPEndpoint(d *engine.Desired) *engine.Desired {
	d.SourceVIPEndpoint = &engine.SourceVIPEndpoint{IP: svipIP}
	return d
}

// ours records lbs in the ledger, as the agent's.
func ours(lbs ...hns.LoadBalancer) func(*Applier, *planWorld) {
	return func(a *Applier, _ *planWorld) {
		for _, lb := range lbs {
			if err := a.owned.Adopt(lb); err != nil {
				panic(err)
			}
		}
	}
}

// plan runs every phase of a full sync (fullSync, in run's order) against
// w without executing anything: with one rule firing, that is the rule's
// plan.
func (w planWorld) plan(t *testing.T) ([]string, *Applier) {
	t.Helper()
	ledger, err := ownership.OpenLedger("")
	if err != nil {
		t.Fatal(err)
	}
	a := New(sim.MustNew(), ledger, WithClock(clocktesting.NewFakeClock(time.Unix(0, 0))))
	a.version = &hns.Version{Major: 15, Minor: 1}
	a.starting = w.first
	if w.prepare != nil {
		w.prepare(a, &w)
	}
	o := &Observation{LoadBalancers: w.lbs}
	o.View = engine.HNSView{Found: true, Network: hns.Network{ID: "NET"}, Endpoints: append([]hns.Endpoint{pod}, w.eps...),
		Capabilities: hns.Capabilities{ModifyLoadBalancer: !w.noMod}}
	r := Result{Writes: map[Write]int{}}
	s := &syncState{a: a, o: o, d: w.d, r: &r, index: newIndex()}
	s.indexListed()
	var ops []op
	for _, plan := range fullSync {
		phase, err := plan(s)
		if err != nil {
			t.Fatal(err)
		}
		// The endpoints a phase deletes are gone by the next, as after the
		// executor carried them out.
		for _, o := range phase {
			if o.kind == opDeleteEndpoint || o.kind == opReplaceEndpoint {
				s.markGone(o.ep.ID)
			}
		}
		ops = append(ops, phase...)
	}
	var out []string
	for _, o := range ops {
		out = append(out, o.String())
	}
	return out, a
}

func TestPlannerRules(t *testing.T) {
	recreate := wantedLB
	recreate.Recreate = true
	withRemoteBackend := wantedLB
	withRemoteBackend.Backends = []engine.Backend{{IP: remoteIP}}
	failed := func(key retryKey) func(*Applier, *planWorld) {
		return func(a *Applier, _ *planWorld) { a.backoff(key, errors.New("boom")) }
	}
	for _, tc := range []struct {
		rule  string
		world planWorld
		want  []string
	}{
		{"nothing to do when HNS holds what is wanted",
			planWorld{d: desired(wantedLB), lbs: []hns.LoadBalancer{hnsLB("LB1", "POD")}, prepare: ours(hnsLB("LB1", "POD"))}, nil},
		{"a remote endpoint of ours holding a local address is deleted",
			planWorld{d: desired(), eps: []hns.Endpoint{ourRemote("DUP", podIP, "10.0.0.3")}},
			[]string{"DeleteEndpoint endpoint DUP DuplicateOfLocalEndpoint"}},
		{"a missing source-VIP endpoint is created first, and gates the rest",
			planWorld{d: withSourceVIPEndpoint(desired())},
			[]string{"CreateEndpoint source-VIP endpoint 192.168.1.2 SourceVIPEndpointMissing (gate)"}},
		{"a source-VIP endpoint whose retry is not due waits, and gates the rest",
			planWorld{d: withSourceVIPEndpoint(desired()), prepare: failed(epRetryKey(svipIP))},
			[]string{"Defer source-VIP endpoint 192.168.1.2 RetryNotDue (gate)"}},
		{"a missing remote endpoint is created",
			planWorld{d: withRemote(desired(), remote)},
			[]string{"CreateEndpoint endpoint 192.168.2.7 EndpointMissing"}},
		{"a remote endpoint of ours with another provider address is replaced",
			planWorld{d: withRemote(desired(), remote), eps: []hns.Endpoint{ourRemote("OLD", remoteIP, "10.0.0.9")}},
			[]string{"ReplaceEndpoint endpoint 192.168.2.7 EndpointStale"}},
		{"a stale endpoint of ours is deleted even while the create's retry waits",
			planWorld{d: withRemote(desired(), remote), eps: []hns.Endpoint{ourRemote("OLD", remoteIP, "10.0.0.9")},
				prepare: failed(epRetryKey(remoteIP))},
			[]string{"DeleteEndpoint endpoint 192.168.2.7 EndpointStale", "Defer endpoint 192.168.2.7 RetryNotDue"}},
		{"a foreign endpoint holding a wanted address is used as it is",
			planWorld{d: withRemote(desired(), remote), eps: []hns.Endpoint{{ID: "CNI", Name: "cni", IPs: []netip.Addr{remoteIP}, Remote: true}}},
			nil},
		{"a remote endpoint of ours nothing wants is deleted",
			planWorld{d: desired(), eps: []hns.Endpoint{ourRemote("GONE", remoteIP, "10.0.0.3")}},
			[]string{"DeleteEndpoint endpoint GONE EndpointUnused"}},
		{"a remote endpoint of ours a load balancer in HNS still uses is kept",
			planWorld{d: desired(), eps: []hns.Endpoint{ourRemote("USED", remoteIP, "10.0.0.3")},
				lbs: []hns.LoadBalancer{hnsLB("FOREIGN", "USED")}},
			nil},
		{"a source-VIP endpoint of ours for an old address is deleted",
			planWorld{d: desired(), eps: []hns.Endpoint{{ID: "SV", Name: hns.OwnedEndpointName(podIP.Next()), IPs: []netip.Addr{netip.MustParseAddr("192.168.1.3")}}}},
			[]string{"DeleteEndpoint source-VIP endpoint SV SourceVIPEndpointStale"}},
		{"a source-VIP endpoint of ours a load balancer still uses is kept",
			planWorld{d: desired(), eps: []hns.Endpoint{{ID: "SV", Name: hns.OwnedEndpointName(podIP.Next()), IPs: []netip.Addr{netip.MustParseAddr("192.168.1.3")}}},
				lbs: []hns.LoadBalancer{func() hns.LoadBalancer {
					lb := hnsLB("FOREIGN", "POD")
					lb.SourceVIP = netip.MustParseAddr("192.168.1.3")
					return lb
				}()}},
			nil},
		{"a wanted load balancer missing from HNS is created",
			planWorld{d: desired(wantedLB)},
			[]string{"CreateLoadBalancer load balancer " + svcKey.String() + " LoadBalancerMissing"}},
		{"a load balancer of ours that differs is modified",
			planWorld{d: desired(wantedLB), lbs: []hns.LoadBalancer{hnsLB("LB1", "OTHER")}, prepare: ours(hnsLB("LB1", "OTHER"))},
			[]string{"ModifyLoadBalancer load balancer " + svcKey.String() + " LoadBalancerChanged"}},
		{"a load balancer that differs is deleted and created where HNS cannot modify",
			planWorld{d: desired(wantedLB), noMod: true, lbs: []hns.LoadBalancer{hnsLB("LB1", "OTHER")}, prepare: ours(hnsLB("LB1", "OTHER"))},
			[]string{"ReplaceLoadBalancer load balancer " + svcKey.String() + " LoadBalancerChanged"}},
		{"a load balancer that differs is deleted and created when its service opted out of modify",
			planWorld{d: desired(recreate), lbs: []hns.LoadBalancer{hnsLB("LB1", "OTHER")}, prepare: ours(hnsLB("LB1", "OTHER"))},
			[]string{"ReplaceLoadBalancer load balancer " + svcKey.String() + " LoadBalancerChanged"}},
		{"a modify HNS accepted without carrying it out turns modifies into replaces",
			planWorld{d: desired(wantedLB), lbs: []hns.LoadBalancer{hnsLB("LB1", "OTHER")}, prepare: func(a *Applier, w *planWorld) {
				ours(hnsLB("LB1", "OTHER"))(a, w)
				a.lastModified[svcKey] = hnsLB("", "ASKED")
			}},
			[]string{"ReplaceLoadBalancer load balancer " + svcKey.String() + " ModifyNotCarriedOut"}},
		{"a load balancer of ours changed behind the agent's back is given up and the wanted one created",
			planWorld{d: desired(wantedLB), lbs: []hns.LoadBalancer{hnsLB("LB1", "CHANGED")}, prepare: func(a *Applier, w *planWorld) {
				ours(hnsLB("LB1", "OTHER"))(a, w)
				a.lbIDs[svcKey] = "LB1"
			}},
			[]string{"CreateLoadBalancer load balancer " + svcKey.String() + " LoadBalancerChangedBehindBack"}},
		{"a load balancer of ours nothing wants is deleted",
			planWorld{d: desired(), lbs: []hns.LoadBalancer{hnsLB("LB1", "POD")}, prepare: ours(hnsLB("LB1", "POD"))},
			[]string{"DeleteLoadBalancer load balancer LB1 LoadBalancerUnwanted"}},
		{"a recorded load balancer nothing wants that is not the agent's any more is given up, not deleted",
			planWorld{d: desired(), lbs: []hns.LoadBalancer{hnsLB("LB1", "CHANGED")}, prepare: ours(hnsLB("LB1", "POD"))},
			[]string{"Disown load balancer LB1 LoadBalancerNotOwned"}},
		{"a foreign load balancer identical to a wanted one is adopted without a call",
			planWorld{d: desired(wantedLB), lbs: []hns.LoadBalancer{hnsLB("KUBEPROXY", "POD")}},
			nil},
		{"a foreign load balancer that is not wanted is left alone",
			planWorld{d: desired(), lbs: []hns.LoadBalancer{hnsLB("KUBEPROXY", "POD")}},
			nil},
		{"a load balancer none of whose backends has an endpoint is left as it is",
			planWorld{d: desired(withRemoteBackend)},
			[]string{"Fail load balancer " + svcKey.String() + " NoBackendEndpoint"}},
		{"a load balancer whose retry is not due waits",
			planWorld{d: desired(wantedLB), prepare: failed(lbRetryKey(svcKey))},
			[]string{"Defer load balancer " + svcKey.String() + " RetryNotDue"}},
		{"the phases come in run's order: local endpoints, remote endpoints, load balancers, clean-up",
			planWorld{d: withSourceVIPEndpoint(withRemote(desired(wantedLB), remote)),
				eps: []hns.Endpoint{ourRemote("GONE", remoteIP.Next(), "10.0.0.3"), ourRemote("DUP", podIP, "10.0.0.3")}},
			[]string{"DeleteEndpoint endpoint DUP DuplicateOfLocalEndpoint",
				"CreateEndpoint source-VIP endpoint 192.168.1.2 SourceVIPEndpointMissing (gate)",
				"CreateEndpoint endpoint 192.168.2.7 EndpointMissing",
				"CreateLoadBalancer load balancer " + svcKey.String() + " LoadBalancerMissing",
				"DeleteEndpoint endpoint GONE EndpointUnused"}},
		{"a load balancer found as wanted drops the retry it had",
			planWorld{d: desired(wantedLB), lbs: []hns.LoadBalancer{hnsLB("LB1", "POD")}, prepare: func(a *Applier, w *planWorld) {
				ours(hnsLB("LB1", "POD"))(a, w)
				failed(lbRetryKey(svcKey))(a, w)
			}},
			[]string{"Settled load balancer " + svcKey.String() + " Programmed"}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			got, _ := tc.world.plan(t)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// Adoption is a ledger write, not an op: the identical foreign load balancer
// is the agent's after planning.
func TestPlannerAdoptsIdenticalForeignLoadBalancer(t *testing.T) {
	w := planWorld{d: desired(wantedLB), lbs: []hns.LoadBalancer{hnsLB("KUBEPROXY", "POD")}}
	if _, a := w.plan(t); !a.owned.Ledger.Has("KUBEPROXY") || a.lbIDs[svcKey] != "KUBEPROXY" {
		t.Errorf("the identical foreign load balancer was not adopted and mapped: recorded %v, mapped to %q", a.owned.Ledger.Has("KUBEPROXY"), a.lbIDs[svcKey])
	}
}
