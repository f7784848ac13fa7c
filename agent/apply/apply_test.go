package apply

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/agent/ownership"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

const (
	nodeName = "node-1"
	netName  = "TestNetwork"
	hostMAC  = "00-15-5D-AA-BB-CC"
)

// host is one simulated node: an HNS, the cluster objects the engine reads,
// and an Applier with its ledger.
type host struct {
	t      *testing.T
	sim    *sim.Sim
	ledger *ownership.Ledger
	app    *Applier
	clk    *clocktesting.FakeClock
	cfg    v1alpha1.ResolvedProxyConfig
	svcs   map[string]*corev1.Service
	slices map[string]*discoveryv1.EndpointSlice
	// persistence, for restarts
	simPath, ledgerPath string
	profile             sim.Profile
}

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

// newHost builds a node with a network (overlay: remote subnet
// 192.168.2.0/24 via 10.0.0.3) and two local pods 192.168.1.5 and .6.
func newHost(t *testing.T, p sim.Profile, overlay, persist bool) *host {
	t.Helper()
	h := &host{t: t, profile: p, svcs: map[string]*corev1.Service{}, slices: map[string]*discoveryv1.EndpointSlice{}}
	if persist {
		dir := t.TempDir()
		h.simPath, h.ledgerPath = filepath.Join(dir, "hns.json"), filepath.Join(dir, "ledger")
	}
	h.start()
	n := hns.Network{Name: netName, Type: hns.NetworkTypeL2Bridge}
	if overlay {
		n.Type = hns.NetworkTypeOverlay
		n.RemoteSubnetRoutes = []hns.RemoteSubnetRoute{{DestinationPrefix: netip.MustParsePrefix("192.168.2.0/24"), ProviderAddress: ip("10.0.0.3")}}
	}
	if _, err := h.sim.AddNetwork(n); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"192.168.1.5", "192.168.1.6"} {
		if _, err := h.sim.AddLocalEndpoint(netName, "pod-"+a, ip(a)); err != nil {
			t.Fatal(err)
		}
	}
	h.cfg = v1alpha1.ResolvedProxyConfig{
		Network:   v1alpha1.NetworkSpec{Name: netName},
		SourceVIP: &v1alpha1.ResolvedSourceVIP{Strategy: v1alpha1.SourceVIPStrategyStatic, Address: "192.168.1.2"},
		NodeIPs:   []string{"10.0.0.1"},
	}
	return h
}

// start (re)starts the agent process: a new simulator handle on the same
// state file, the ledger reopened, a new Applier.
func (h *host) start() {
	h.t.Helper()
	var opts []sim.Option
	opts = append(opts, sim.WithProfile(h.profile))
	if h.simPath != "" {
		opts = append(opts, sim.WithStateFile(h.simPath))
	}
	s, err := sim.New(opts...)
	if err != nil {
		h.t.Fatal(err)
	}
	// As the agent on a simulated host does: the host's weather can fill its disk.
	l, err := ownership.OpenLedger(h.ledgerPath, ownership.WithWriteFault(s.DiskFault))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { s.Close(); l.Close() })
	h.sim, h.ledger = s, l
	h.clk = clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	h.app = New(s, l, WithClock(h.clk))
}

func (h *host) desired(v engine.HNSView) *engine.Desired { return engine.Compute(h.input(v)) }

// input is what the engine reads on this host with HNS as v shows it.
func (h *host) input(v engine.HNSView) engine.Input {
	in := engine.Input{NodeName: nodeName, Config: h.cfg, HNS: v}
	for _, s := range h.svcs {
		in.Services = append(in.Services, s)
	}
	for _, s := range h.slices {
		in.EndpointSlices = append(in.EndpointSlices, s)
	}
	return in
}

// sync runs one sync and returns its result and the simulator's counts.
func (h *host) sync() (Result, sim.Counts) {
	h.t.Helper()
	h.sim.Reset()
	r, err := FullSync(context.Background(), h.app, netName, hostMAC, h.desired)
	if err != nil {
		h.t.Fatalf("sync: %v", err)
	}
	return r, h.sim.Counts()
}

func (h *host) service(name, cip string, nodePort int32) {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: cip, ClusterIPs: []string{cip},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080), NodePort: nodePort}}},
	}
	if nodePort > 0 {
		s.Spec.Type = corev1.ServiceTypeNodePort
	}
	h.svcs[name] = s
}

// endpoints sets a service's slice; "a@n" is address a on node n.
func (h *host) endpoints(svc string, eps ...string) {
	pn, port, proto := "http", int32(8080), corev1.ProtocolTCP
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: svc + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &pn, Port: &port, Protocol: &proto}},
	}
	for _, e := range eps {
		a, n, _ := strings.Cut(e, "@")
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, NodeName: &n})
	}
	h.slices[svc] = s
}

func (h *host) snapshot() sim.State {
	h.t.Helper()
	st, err := h.sim.Snapshot()
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

func (h *host) lbIDByVIP(vip string, port uint16) string {
	for _, lb := range h.snapshot().LoadBalancers {
		if lb.VIP().String() == vip && lb.PortMapping.ExternalPort == port || vip == "*" && !lb.VIP().IsValid() && lb.PortMapping.ExternalPort == port {
			return lb.ID
		}
	}
	return ""
}

// workload is three services on an overlay host: local and remote backends.
func workload(h *host) {
	h.service("svc1", "10.20.30.41", 30001)
	h.endpoints("svc1", "192.168.1.5@node-1", "192.168.2.3@node-2")
	h.service("svc2", "10.20.30.42", 0)
	h.endpoints("svc2", "192.168.2.3@node-2", "192.168.2.4@node-2")
	h.service("svc3", "10.20.30.43", 0)
	h.endpoints("svc3", "192.168.1.6@node-1")
}

func writes(c sim.Counts) map[sim.Op]int {
	out := map[sim.Op]int{}
	for op, n := range c.Calls {
		if op.IsWrite() {
			out[op] = n
		}
	}
	return out
}

func TestFirstSyncThenUnchangedSyncMakesNoWrites(t *testing.T) {
	for _, p := range []sim.Profile{sim.WS2019, sim.WS2022, sim.WS2025} {
		t.Run(p.Name, func(t *testing.T) {
			h := newHost(t, p, true, false)
			workload(h)
			r, c := h.sync()
			// Source-VIP endpoint, 3 service-VIP endpoints, 2 remote
			// backends; 4 LBs (svc1 ClusterIP + NodePort, svc2, svc3).
			want := map[sim.Op]int{sim.OpCreateEndpoint: 6, sim.OpCreateLoadBalancer: 4}
			if diff := cmp.Diff(want, writes(c)); diff != "" {
				t.Errorf("first sync writes (-want +got):\n%s", diff)
			}
			if r.LBsDesired != 4 || r.LBsProgrammed != 4 || r.LBsFailed != 0 || r.RemoteEndpoints != 5 {
				t.Errorf("result %+v", r)
			}
			r, c = h.sync()
			if c.Writes != 0 {
				t.Errorf("unchanged sync made %d writes: %v", c.Writes, writes(c))
			}
			if c.Reads > 4 {
				t.Errorf("unchanged sync made %d reads, want at most 4: %v", c.Reads, c.Calls)
			}
			if r.LBsProgrammed != 4 || r.WriteCount() != 0 {
				t.Errorf("result %+v", r)
			}
		})
	}
}

func TestOneEndpointChange(t *testing.T) {
	for _, tc := range []struct {
		name        string
		profile     sim.Profile
		add, remove map[sim.Op]int
		sameID      bool
	}{
		{"scenario-20-modify-in-place", sim.WS2025,
			map[sim.Op]int{sim.OpCreateEndpoint: 1, sim.OpModifyLoadBalancer: 1},
			map[sim.Op]int{sim.OpModifyLoadBalancer: 1, sim.OpDeleteEndpoint: 1}, true},
		{"scenario-21-delete-and-create-without-modify", sim.WS2022,
			map[sim.Op]int{sim.OpCreateEndpoint: 1, sim.OpDeleteLoadBalancer: 1, sim.OpCreateLoadBalancer: 1},
			map[sim.Op]int{sim.OpDeleteLoadBalancer: 1, sim.OpCreateLoadBalancer: 1, sim.OpDeleteEndpoint: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, tc.profile, true, false)
			workload(h)
			h.sync()
			before := h.lbIDByVIP("10.20.30.42", 80)

			h.endpoints("svc2", "192.168.2.3@node-2", "192.168.2.4@node-2", "192.168.2.9@node-2")
			_, c := h.sync()
			if diff := cmp.Diff(tc.add, writes(c)); diff != "" {
				t.Errorf("add: writes (-want +got):\n%s", diff)
			}
			if after := h.lbIDByVIP("10.20.30.42", 80); (after == before) != tc.sameID {
				t.Errorf("LB ID %s -> %s, same ID wanted: %v", before, after, tc.sameID)
			}

			h.endpoints("svc2", "192.168.2.3@node-2", "192.168.2.4@node-2")
			_, c = h.sync()
			if diff := cmp.Diff(tc.remove, writes(c)); diff != "" {
				t.Errorf("remove: writes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScenario22ModifyNotImplementedFallsBack(t *testing.T) {
	h := newHost(t, sim.WS2025, false, false)
	workload(h)
	h.sync()
	h.sim.FailOp(sim.OpModifyLoadBalancer, hns.ErrNotImplemented, 1)
	h.endpoints("svc3", "192.168.1.6@node-1", "192.168.1.5@node-1")
	_, c := h.sync()
	want := map[sim.Op]int{sim.OpModifyLoadBalancer: 1, sim.OpDeleteLoadBalancer: 1, sim.OpCreateLoadBalancer: 1}
	if diff := cmp.Diff(want, writes(c)); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	// The capability stays off: the next change does not try modify.
	h.endpoints("svc3", "192.168.1.6@node-1")
	_, c = h.sync()
	want = map[sim.Op]int{sim.OpDeleteLoadBalancer: 1, sim.OpCreateLoadBalancer: 1}
	if diff := cmp.Diff(want, writes(c)); diff != "" {
		t.Errorf("second change writes (-want +got):\n%s", diff)
	}
}

// staleModify is HNS 15.4 (k/k #131466): a modify is accepted and changes
// everything but the backends.
type staleModify struct{ *sim.Sim }

func (s staleModify) ModifyLoadBalancer(ctx context.Context, id string, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	st, err := s.Snapshot()
	if err != nil {
		return hns.LoadBalancer{}, err
	}
	for _, cur := range st.LoadBalancers {
		if cur.ID == id {
			lb.BackendEndpointIDs = cur.BackendEndpointIDs
		}
	}
	return s.Sim.ModifyLoadBalancer(ctx, id, lb)
}

func TestModifyWithoutEffectFallsBack(t *testing.T) {
	h := newHost(t, sim.WS2025, false, false)
	h.app = New(staleModify{h.sim}, h.ledger, WithClock(h.clk))
	workload(h)
	h.sync()
	h.endpoints("svc3", "192.168.1.6@node-1", "192.168.1.5@node-1")
	_, c := h.sync()
	if diff := cmp.Diff(map[sim.Op]int{sim.OpModifyLoadBalancer: 1}, writes(c)); diff != "" {
		t.Errorf("first try: writes (-want +got):\n%s", diff)
	}
	// The LB still has the old backends: not another modify, but a
	// replacement, after which nothing differs.
	recreate := map[sim.Op]int{sim.OpDeleteLoadBalancer: 1, sim.OpCreateLoadBalancer: 1}
	_, c = h.sync()
	if diff := cmp.Diff(recreate, writes(c)); diff != "" {
		t.Errorf("next sync: writes (-want +got):\n%s", diff)
	}
	if _, c := h.sync(); c.Writes != 0 {
		t.Errorf("sync after the replacement made %d writes: %v", c.Writes, writes(c))
	}
	// Modify is not trusted again.
	h.endpoints("svc3", "192.168.1.6@node-1")
	_, c = h.sync()
	if diff := cmp.Diff(recreate, writes(c)); diff != "" {
		t.Errorf("next change: writes (-want +got):\n%s", diff)
	}
}

func TestScenario52OptimizationDisabledRecreates(t *testing.T) {
	h := newHost(t, sim.WS2025, false, false)
	workload(h)
	h.svcs["svc3"].Annotations = map[string]string{engine.AnnotationWinProxyOptimization: "DISABLED"}
	h.sync()
	h.endpoints("svc3", "192.168.1.6@node-1", "192.168.1.5@node-1")
	_, c := h.sync()
	want := map[sim.Op]int{sim.OpDeleteLoadBalancer: 1, sim.OpCreateLoadBalancer: 1}
	if diff := cmp.Diff(want, writes(c)); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

func TestRestartMakesNoWrites(t *testing.T) {
	h := newHost(t, sim.WS2022, true, true)
	workload(h)
	h.sync()
	before := h.snapshot()
	h.start() // scenario 13: a new process on the same host
	r, c := h.sync()
	if c.Writes != 0 {
		t.Errorf("restarted agent made %d writes: %v", c.Writes, writes(c))
	}
	if r.LBsProgrammed != 4 {
		t.Errorf("result %+v", r)
	}
	if diff := cmp.Diff(before, h.snapshot(), cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{})); diff != "" {
		t.Errorf("host changed across the restart (-before +after):\n%s", diff)
	}
	// And it still owns what it re-adopted: a change is applied.
	h.endpoints("svc3", "192.168.1.6@node-1", "192.168.1.5@node-1")
	if r, _ := h.sync(); len(r.Failures) != 0 {
		t.Errorf("change after restart failed: %+v", r.Failures)
	}
}

// With the ledger lost (here: emptied, as the adversarial run did),
// endpoints are recognised by their winproxy- name and every load balancer
// is identical to one the agent wants: all are adopted without a write,
// where replacing each, as winkernel replaces a load balancer blocking its
// frontend (docs/design/dataplane.md#foreign-load-balancers), would cost the
// node a delete-and-create of every load balancer.
func TestRestartWithLedgerLost(t *testing.T) {
	h := newHost(t, sim.WS2022, true, true)
	workload(h)
	h.sync()
	if err := os.WriteFile(h.ledgerPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	before := h.snapshot()
	h.start()
	r, c := h.sync()
	if c.Writes != 0 {
		t.Errorf("restart with the ledger lost made %d writes: %v", c.Writes, writes(c))
	}
	if r.LBsProgrammed != 4 || r.Adopted != 4 || len(r.ForeignReplaced) != 0 || len(r.Failures) != 0 {
		t.Errorf("result %+v", r)
	}
	if diff := cmp.Diff(before, h.snapshot(), cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{})); diff != "" {
		t.Errorf("host changed (-before +after):\n%s", diff)
	}
	if n := len(h.ledger.IDs()); n != 4 {
		t.Errorf("%d LBs recorded, want the 4 adopted", n)
	}
	if _, c := h.sync(); c.Writes != 0 {
		t.Errorf("sync after the adoption made %d writes: %v", c.Writes, writes(c))
	}
	// What was adopted is the agent's: a change is applied, as any other.
	h.endpoints("svc3", "192.168.1.6@node-1", "192.168.1.5@node-1")
	r, c = h.sync()
	if diff := cmp.Diff(map[sim.Op]int{sim.OpDeleteLoadBalancer: 1, sim.OpCreateLoadBalancer: 1}, writes(c)); diff != "" || len(r.ForeignReplaced) != 0 {
		t.Errorf("change after the adoption: writes (-want +got):\n%s foreign replaced %v", diff, r.ForeignReplaced)
	}
}

// A load balancer identical to a desired one but not recorded (kube-proxy's
// after a migration, or one re-created by an admin) is adopted: the agent
// would otherwise replace it as a blocker of its frontend
// (docs/design/dataplane.md#foreign-load-balancers) with the very same LB.
func TestForeignIdenticalLBIsAdopted(t *testing.T) {
	h := newHost(t, sim.WS2022, false, false)
	workload(h)
	h.sync()
	var theirs hns.LoadBalancer
	for _, lb := range h.snapshot().LoadBalancers {
		if lb.VIP() == ip("10.20.30.43") {
			theirs = lb
		}
	}
	if err := h.sim.RemoveLoadBalancer(theirs.ID); err != nil {
		t.Fatal(err)
	}
	theirs.ID = ""
	theirs, err := h.sim.AddLoadBalancer(theirs)
	if err != nil {
		t.Fatal(err)
	}
	r, c := h.sync()
	if c.Writes != 0 {
		t.Errorf("writes %v, want none", writes(c))
	}
	if r.Adopted != 1 || len(r.ForeignReplaced) != 0 || !h.ledger.Has(theirs.ID) {
		t.Errorf("adopted %d, foreign replaced %v, recorded %v; want the identical LB adopted", r.Adopted, r.ForeignReplaced, h.ledger.Has(theirs.ID))
	}
}

// killedAfter stands for an agent process killed right after its nth
// successful LB create, before it could record the ID.
type killedAfter struct {
	*sim.Sim
	n int
}

type killed struct{}

func (k *killedAfter) CreateLoadBalancer(ctx context.Context, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	got, err := k.Sim.CreateLoadBalancer(ctx, lb)
	if err == nil {
		if k.n--; k.n == 0 {
			panic(killed{})
		}
	}
	return got, err
}

// The crash window the intent closes: the LB created just before the kill
// is adopted on restart, without a write.
func TestKillBetweenCreateAndRecordAdoptsByIntent(t *testing.T) {
	h := newHost(t, sim.WS2022, false, true)
	workload(h)
	h.app = New(&killedAfter{Sim: h.sim, n: 2}, h.ledger, WithClock(h.clk))
	func() {
		defer func() {
			if p := recover(); p != (killed{}) {
				t.Fatalf("recovered %v", p)
			}
		}()
		h.sync()
	}()
	h.start()
	r, c := h.sync()
	// The first sync had programmed the Services with local endpoints
	// first: the endpoint of the others' is still to be created.
	if diff := cmp.Diff(map[sim.Op]int{sim.OpCreateEndpoint: 1, sim.OpCreateLoadBalancer: 2}, writes(c)); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if r.Adopted != 1 || len(r.ForeignReplaced) != 0 || r.LBsProgrammed != 4 {
		t.Errorf("result %+v", r)
	}
	if n := len(h.ledger.IDs()); n != 4 {
		t.Errorf("%d LBs recorded, want 4", n)
	}
}

func TestDriftIsRepaired(t *testing.T) {
	h := newHost(t, sim.WS2022, true, false)
	workload(h)
	h.sync()

	if err := h.sim.RemoveLoadBalancer(h.lbIDByVIP("10.20.30.42", 80)); err != nil {
		t.Fatal(err)
	}
	r, c := h.sync()
	if diff := cmp.Diff(map[sim.Op]int{sim.OpCreateLoadBalancer: 1}, writes(c)); diff != "" {
		t.Errorf("LB drift: writes (-want +got):\n%s", diff)
	}
	if r.DriftRepairs != (DriftRepairs{LoadBalancers: 1}) || h.lbIDByVIP("10.20.30.42", 80) == "" {
		t.Errorf("LB not restored: %+v", r)
	}

	// A remote endpoint used by svc1 and svc2 disappears: recreated once,
	// both ClusterIP LBs and svc1's NodePort LB re-pointed.
	var epID string
	for _, ep := range h.snapshot().Endpoints {
		if ep.Remote && ep.HasIP(ip("192.168.2.3")) {
			epID = ep.ID
		}
	}
	if err := h.sim.RemoveEndpoint(epID); err != nil {
		t.Fatal(err)
	}
	r, c = h.sync()
	want := map[sim.Op]int{sim.OpCreateEndpoint: 1, sim.OpDeleteLoadBalancer: 3, sim.OpCreateLoadBalancer: 3}
	if diff := cmp.Diff(want, writes(c)); diff != "" {
		t.Errorf("endpoint drift: writes (-want +got):\n%s", diff)
	}
	if r.DriftRepairs != (DriftRepairs{Endpoints: 1}) {
		t.Errorf("drift repairs = %+v, want 1 endpoint", r.DriftRepairs)
	}
	if _, c := h.sync(); c.Writes != 0 {
		t.Errorf("sync after repair made %d writes", c.Writes)
	}
}

func TestScenario42SourceVIPEndpoint(t *testing.T) {
	h := newHost(t, sim.WS2022, true, false)
	workload(h)
	h.sim.FailOp(sim.OpCreateEndpoint, nil, 1) // the first create is the source VIP's
	r, c := h.sync()
	if r.Skipped != SkippedSourceVIP || c.Writes != 1 {
		t.Fatalf("failed source-VIP create: skipped=%q writes=%v", r.Skipped, writes(c))
	}
	h.clk.Step(time.Second)
	h.sync()
	var svip hns.Endpoint
	for _, ep := range h.snapshot().Endpoints {
		if ep.HasIP(ip("192.168.1.2")) {
			svip = ep
		}
	}
	if svip.ID == "" || svip.Remote || svip.MAC != hostMAC {
		t.Fatalf("source-VIP endpoint = %v, want local with the host MAC", svip)
	}
	if err := h.sim.RemoveEndpoint(svip.ID); err != nil {
		t.Fatal(err)
	}
	_, c = h.sync()
	if diff := cmp.Diff(map[sim.Op]int{sim.OpCreateEndpoint: 1}, writes(c)); diff != "" {
		t.Errorf("recreate: writes (-want +got):\n%s", diff)
	}
}

// When the overlay source VIP changes, the endpoint the agent created for
// the old one is deleted once no load balancer uses it any more.
func TestChangedSourceVIPEndpointIsDeleted(t *testing.T) {
	h := newHost(t, sim.WS2022, true, false)
	workload(h)
	h.sync()
	h.cfg.SourceVIP = &v1alpha1.ResolvedSourceVIP{Strategy: v1alpha1.SourceVIPStrategyCreate, Address: "192.168.1.3"}
	r, c := h.sync()
	want := map[sim.Op]int{sim.OpCreateEndpoint: 1, sim.OpDeleteLoadBalancer: 4, sim.OpCreateLoadBalancer: 4, sim.OpDeleteEndpoint: 1}
	if diff := cmp.Diff(want, writes(c)); diff != "" || len(r.Failures) != 0 {
		t.Errorf("writes (-want +got):\n%s failures %v", diff, r.Failures)
	}
	for _, ep := range h.snapshot().Endpoints {
		if ep.HasIP(ip("192.168.1.2")) {
			t.Errorf("old source-VIP endpoint left: %v", ep)
		}
	}
	if _, c := h.sync(); c.Writes != 0 {
		t.Errorf("next sync made %d writes: %v", c.Writes, writes(c))
	}
}

// An old source-VIP endpoint still used by an LB whose update failed (and
// left it as it was) stays until that LB is updated.
func TestSourceVIPEndpointInUseIsKept(t *testing.T) {
	h := newHost(t, sim.WS2025, true, false)
	workload(h)
	h.sync()
	h.cfg.SourceVIP = &v1alpha1.ResolvedSourceVIP{Strategy: v1alpha1.SourceVIPStrategyCreate, Address: "192.168.1.3"}
	h.sim.FailOp(sim.OpModifyLoadBalancer, nil, 1)
	if _, c := h.sync(); c.Calls[sim.OpDeleteEndpoint] != 0 {
		t.Errorf("source-VIP endpoint deleted while an LB may use it: %v", writes(c))
	}
	h.clk.Step(time.Second)
	if _, c := h.sync(); c.Calls[sim.OpDeleteEndpoint] != 1 {
		t.Errorf("old source-VIP endpoint not deleted once unused: %v", writes(c))
	}
}

func TestForeignObjects(t *testing.T) {
	h := newHost(t, sim.WS2022, false, false)
	workload(h)
	pods := h.snapshot().Endpoints
	// Scenario 33: a foreign LB holding svc3's exact frontend with other
	// backends, one on another frontend, and a foreign remote endpoint.
	blocker, err := h.sim.AddLoadBalancer(hns.LoadBalancer{FrontendVIPs: []netip.Addr{ip("10.20.30.43")},
		PortMapping: hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 8080, ExternalPort: 80}, BackendEndpointIDs: []string{pods[0].ID}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := h.sim.AddLoadBalancer(hns.LoadBalancer{FrontendVIPs: []netip.Addr{ip("10.99.0.1")},
		PortMapping: hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 80, ExternalPort: 80}, BackendEndpointIDs: []string{pods[0].ID}})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := h.sync()
	if len(r.ForeignReplaced) != 1 || len(r.Failures) != 0 {
		t.Errorf("foreign replaced = %v, failures %v; want the one blocker", r.ForeignReplaced, r.Failures)
	}
	st := h.snapshot()
	has := func(id string) bool {
		for _, lb := range st.LoadBalancers {
			if lb.ID == id {
				return true
			}
		}
		return false
	}
	if has(blocker.ID) || !has(other.ID) {
		t.Errorf("blocker present %v (want false), other present %v (want true)", has(blocker.ID), has(other.ID))
	}
	// Nothing else is ever touched, even with everything deleted.
	h.svcs, h.slices = map[string]*corev1.Service{}, map[string]*discoveryv1.EndpointSlice{}
	h.sync()
	st = h.snapshot()
	if !has(other.ID) || len(st.LoadBalancers) != 1 {
		t.Errorf("after removing every service: %v", st.LoadBalancers)
	}
	for _, p := range pods {
		found := false
		for _, ep := range st.Endpoints {
			found = found || ep.ID == p.ID
		}
		if !found {
			t.Errorf("local endpoint %s deleted", p.ID)
		}
	}
}

func TestScenario33PortExistsWithoutASingleBlocker(t *testing.T) {
	h := newHost(t, sim.WS2022, false, false)
	h.service("svc3", "10.20.30.43", 0)
	h.endpoints("svc3", "192.168.1.6@node-1")
	h.sim.FailOp(sim.OpCreateLoadBalancer, hns.ErrPortExists, 1)
	r, c := h.sync()
	if len(r.Failures) != 1 || !hns.IsPortExists(r.Failures[0].Err) || c.Calls[sim.OpDeleteLoadBalancer] != 0 {
		t.Errorf("failures %v, deletes %d; want the original error and no delete", r.Failures, c.Calls[sim.OpDeleteLoadBalancer])
	}
}

func TestFailureIsolationAndBackoff(t *testing.T) {
	h := newHost(t, sim.WS2022, false, false)
	workload(h)
	h.sim.FailOp(sim.OpCreateLoadBalancer, nil, 1)
	r, _ := h.sync()
	if r.LBsProgrammed != 3 || r.LBsFailed != 1 {
		t.Fatalf("first sync: %+v", r)
	}
	// Not due yet: no call for it.
	r, c := h.sync()
	if c.Writes != 0 || r.LBsFailed != 1 || !r.Failures[0].Deferred {
		t.Errorf("retry before its time: writes %v, result %+v", writes(c), r)
	}
	h.clk.Step(time.Second)
	r, c = h.sync()
	if diff := cmp.Diff(map[sim.Op]int{sim.OpCreateLoadBalancer: 1}, writes(c)); diff != "" || r.LBsFailed != 0 {
		t.Errorf("retry: writes (-want +got):\n%s result %+v", diff, r)
	}
	// Backoff doubles on repeated failure.
	h.endpoints("svc3", "192.168.1.6@node-1", "192.168.1.5@node-1")
	h.sim.FailOp(sim.OpCreateLoadBalancer, nil, 2)
	h.sync() // fails: next in 1s
	h.clk.Step(time.Second)
	h.sync() // fails: next in 2s
	h.clk.Step(time.Second)
	if _, c := h.sync(); c.Writes != 0 {
		t.Errorf("retried after 1s, backoff should be 2s")
	}
	h.clk.Step(time.Second)
	if r, _ := h.sync(); r.LBsFailed != 0 {
		t.Errorf("not recovered: %+v", r)
	}
}

// The backoff of a failed object ends with its service: one that comes
// back is programmed at once, and nothing is kept for it meanwhile.
func TestRetriesOfUndesiredObjectsArePruned(t *testing.T) {
	h := newHost(t, sim.WS2022, false, false)
	h.service("svc1", "10.20.30.41", 0)
	h.endpoints("svc1", "192.168.2.3@node-2")
	h.sim.FailOp(sim.OpCreateEndpoint, nil, 1)
	h.sim.FailOp(sim.OpCreateLoadBalancer, nil, 1)
	h.service("svc3", "10.20.30.43", 0)
	h.endpoints("svc3", "192.168.1.6@node-1")
	// svc1's LB is not tried without its endpoint.
	if r, _ := h.sync(); len(r.Failures) != 3 || len(h.app.retries) != 2 {
		t.Fatalf("failures %v, retries %v; want the endpoint's and svc3's LB's", r.Failures, h.app.retries)
	}
	svc1, svc3 := h.svcs["svc1"], h.svcs["svc3"]
	h.svcs, h.slices = map[string]*corev1.Service{}, map[string]*discoveryv1.EndpointSlice{}
	h.sync()
	if len(h.app.retries) != 0 {
		t.Errorf("retries kept for undesired objects: %v", h.app.retries)
	}
	h.svcs["svc1"], h.svcs["svc3"] = svc1, svc3
	h.endpoints("svc1", "192.168.2.3@node-2")
	h.endpoints("svc3", "192.168.1.6@node-1")
	r, c := h.sync()
	want := map[sim.Op]int{sim.OpCreateEndpoint: 1, sim.OpCreateLoadBalancer: 2}
	if diff := cmp.Diff(want, writes(c)); diff != "" || len(r.Failures) != 0 {
		t.Errorf("services back: writes (-want +got):\n%s failures %v", diff, r.Failures)
	}
}

func TestScenario19RemoteEndpointsAreRefCounted(t *testing.T) {
	h := newHost(t, sim.WS2022, false, false)
	h.service("svc1", "10.20.30.41", 30001)
	h.endpoints("svc1", "192.168.2.3@node-2")
	h.service("svc2", "10.20.30.42", 30002)
	h.endpoints("svc2", "192.168.2.3@node-2")
	_, c := h.sync()
	if c.Calls[sim.OpCreateEndpoint] != 1 {
		t.Errorf("shared endpoint created %d times", c.Calls[sim.OpCreateEndpoint])
	}
	delete(h.svcs, "svc2")
	delete(h.slices, "svc2")
	_, c = h.sync()
	if diff := cmp.Diff(map[sim.Op]int{sim.OpDeleteLoadBalancer: 2}, writes(c)); diff != "" {
		t.Errorf("delete svc2: writes (-want +got):\n%s", diff)
	}
	delete(h.svcs, "svc1")
	delete(h.slices, "svc1")
	r, c := h.sync()
	if diff := cmp.Diff(map[sim.Op]int{sim.OpDeleteLoadBalancer: 2, sim.OpDeleteEndpoint: 1}, writes(c)); diff != "" {
		t.Errorf("delete svc1: writes (-want +got):\n%s", diff)
	}
	if r.RemoteEndpoints != 0 {
		t.Errorf("remote endpoints = %d", r.RemoteEndpoints)
	}
}

func TestScenario31And36LocalEndpointReplacesRemote(t *testing.T) {
	h := newHost(t, sim.WS2022, false, false) // WS2022 has the duplicate-IP quirk
	h.service("svc1", "10.20.30.41", 0)
	h.endpoints("svc1", "192.168.1.9@node-2")
	h.sync()
	// The pod moves here: the CNI creates a local endpoint with the same IP.
	if _, err := h.sim.AddLocalEndpoint(netName, "pod-9", ip("192.168.1.9")); err != nil {
		t.Fatal(err)
	}
	h.endpoints("svc1", "192.168.1.9@node-1")
	_, c := h.sync()
	want := map[sim.Op]int{sim.OpDeleteEndpoint: 1, sim.OpDeleteLoadBalancer: 1, sim.OpCreateLoadBalancer: 1}
	if diff := cmp.Diff(want, writes(c)); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	for _, ep := range h.snapshot().Endpoints {
		if ep.HasIP(ip("192.168.1.9")) && ep.Remote {
			t.Errorf("duplicate remote endpoint left: %v", ep)
		}
	}
}

func TestScenario44HNSNotRunning(t *testing.T) {
	h := newHost(t, sim.WS2022, true, false)
	workload(h)
	h.sync()
	before := h.snapshot()
	if err := h.sim.SetHNSRunning(false); err != nil {
		t.Fatal(err)
	}
	h.sim.Reset()
	// The agent skips a sync whose Observe fails (agent/daemon program).
	if _, err := FullSync(context.Background(), h.app, netName, hostMAC, h.desired); !hns.IsHNSNotRunning(err) || h.sim.Counts().Writes != 0 {
		t.Errorf("err %v, writes %d", err, h.sim.Counts().Writes)
	}
	h.sim.SetHNSRunning(true)
	before.Stopped = false
	if diff := cmp.Diff(before, h.snapshot(), cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{})); diff != "" {
		t.Errorf("state changed (-before +after):\n%s", diff)
	}
}

func TestBlockedDesiredTouchesNothing(t *testing.T) {
	h := newHost(t, sim.WS2022, true, false)
	workload(h)
	h.sync()
	// The config switches to an Endpoint strategy whose endpoint is missing.
	h.cfg.SourceVIP = &v1alpha1.ResolvedSourceVIP{Strategy: v1alpha1.SourceVIPStrategyEndpoint, EndpointName: "Calico_ep"}
	r, c := h.sync()
	if r.Skipped != SkippedBlocked || c.Writes != 0 {
		t.Errorf("skipped %q writes %v", r.Skipped, writes(c))
	}
}
