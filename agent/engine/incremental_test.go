package engine

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/featuregate"
	"github.com/winproxy/winproxy/internal/testbuild"
)

// TestIncrementalSteps runs the multi-step scenarios through one Incremental and checks
// each step against both the expectation and a full Compute.
func TestIncrementalSteps(t *testing.T) {
	type step struct {
		do      func(c *Incremental, in *Input)
		lbs     []string
		remotes []string
	}
	l1, l2 := localEP("EP-L1", "192.168.1.5"), localEP("EP-L2", "192.168.1.6")
	for _, tc := range []struct {
		name  string
		in    Input
		steps []step
	}{
		{
			name: "scenario-26-itp-local-clusterip",
			in: Input{NodeName: nodeName, Config: config(false), HNS: view(false, ws2022, l1),
				Services:       []*corev1.Service{service("svc1", testbuild.InternalTrafficLocal())},
				EndpointSlices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, testbuild.Endpoint("192.168.1.5", nodeName))}},
			steps: []step{
				{lbs: []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1]"}},
				{do: func(c *Incremental, in *Input) {
					in.HNS.Endpoints = append(in.HNS.Endpoints, l2)
					in.EndpointSlices = []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, testbuild.Endpoint("192.168.1.5", nodeName), testbuild.Endpoint("192.168.1.6", nodeName))}
					c.SetNode(in.NodeName, in.Config, nil, in.HNS)
					c.SetEndpointSlice(in.EndpointSlices[0])
				}, lbs: []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1 192.168.1.6@EP-L2]"}},
				{do: func(c *Incremental, in *Input) {
					in.EndpointSlices = append(in.EndpointSlices, slice("svc1", "s2", 80, testbuild.Endpoint("192.168.2.3", "node-2")))
					c.SetEndpointSlice(in.EndpointSlices[1])
				}, lbs: []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1 192.168.1.6@EP-L2]"}},
			},
		},
		{
			name: "scenario-19-deleting-one-sharer-keeps-the-remote-endpoint",
			in: Input{NodeName: nodeName, Config: config(false), HNS: view(false, ws2022),
				Services: []*corev1.Service{service("svc1"), service("svc2", testbuild.ClusterIPs("10.20.30.42"))},
				EndpointSlices: []*discoveryv1.EndpointSlice{
					slice("svc1", "s1", 80, testbuild.Endpoint("192.168.2.3", "node-2")), slice("svc2", "s2", 80, testbuild.Endpoint("192.168.2.3", "node-2"))}},
			steps: []step{
				{lbs: []string{
					"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
					"IPv4/clusterip 10.20.30.42:80/TCP ns/svc2:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				}, remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"}},
				{do: func(c *Incremental, in *Input) {
					in.Services, in.EndpointSlices = in.Services[:1], in.EndpointSlices[:1]
					c.DeleteService("ns", "svc2")
					c.DeleteEndpointSlice("ns", "s2")
				}, lbs: []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]"},
					remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"}},
				{do: func(c *Incremental, in *Input) {
					in.EndpointSlices = nil
					c.DeleteEndpointSlice("ns", "s1")
				}},
			},
		},
		{
			name: "scenario-31-remote-endpoint-replaced-by-a-local-one",
			in: Input{NodeName: nodeName, Config: config(false), HNS: view(false, ws2022),
				Services: []*corev1.Service{service("svc1"), service("svc2", testbuild.ClusterIPs("10.20.30.42"))},
				EndpointSlices: []*discoveryv1.EndpointSlice{
					slice("svc1", "s1", 80, testbuild.Endpoint("192.168.2.3", "node-2")), slice("svc2", "s2", 80, testbuild.Endpoint("192.168.2.3", "node-2"))}},
			steps: []step{
				{lbs: []string{
					"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
					"IPv4/clusterip 10.20.30.42:80/TCP ns/svc2:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				}, remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"}},
				{do: func(c *Incremental, in *Input) {
					in.HNS.Endpoints = []hns.Endpoint{localEP("EP-B", "192.168.2.3")}
					in.Services = append(in.Services, service("svc3", testbuild.ClusterIPs("10.20.30.43")))
					in.EndpointSlices = []*discoveryv1.EndpointSlice{slice("svc3", "s3", 80, testbuild.Endpoint("192.168.2.3", nodeName))}
					c.SetNode(in.NodeName, in.Config, nil, in.HNS)
					c.SetService(in.Services[2])
					c.DeleteEndpointSlice("ns", "s1")
					c.DeleteEndpointSlice("ns", "s2")
					c.SetEndpointSlice(in.EndpointSlices[0])
				}, lbs: []string{"IPv4/clusterip 10.20.30.43:80/TCP ns/svc3:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3@EP-B]"}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			c := NewIncremental()
			c.SetNode(in.NodeName, in.Config, nil, in.HNS)
			for _, s := range in.Services {
				c.SetService(s)
			}
			for _, s := range in.EndpointSlices {
				c.SetEndpointSlice(s)
			}
			for i, st := range tc.steps {
				if st.do != nil {
					st.do(c, &in)
				}
				d := c.Desired()
				if diff := cmp.Diff(st.lbs, lbs(d)); diff != "" {
					t.Errorf("step %d: load balancers (-want +got):\n%s", i, diff)
				}
				if diff := cmp.Diff(st.remotes, remotes(d)); diff != "" {
					t.Errorf("step %d: remote endpoints (-want +got):\n%s", i, diff)
				}
				full := Compute(in)
				if diff := cmp.Diff(lbs(full), lbs(d)); diff != "" {
					t.Errorf("step %d: incremental differs from full computation (-full +incremental):\n%s", i, diff)
				}
				if diff := cmp.Diff(remotes(full), remotes(d)); diff != "" {
					t.Errorf("step %d: incremental remotes differ from full computation (-full +incremental):\n%s", i, diff)
				}
			}
		})
	}
}

// A sync after the network was read again with equal routes recomputes nothing, and a later
// change of a route is still seen: SetNode keeps the latest read of equal inputs.
func TestSetNodeNetworkReadAgain(t *testing.T) {
	in := Input{NodeName: nodeName, Config: config(false), HNS: view(true, ws2022, sourceVIPEP()),
		Services:       []*corev1.Service{service("svc1")},
		EndpointSlices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, testbuild.Endpoint("192.168.2.3", "node-2"))}}
	in.HNS.EndpointsVersion = 1
	c := NewIncremental()
	c.SetNode(in.NodeName, in.Config, nil, in.HNS)
	c.SetService(in.Services[0])
	c.SetEndpointSlice(in.EndpointSlices[0])
	c.Desired()

	in.HNS.Network.RemoteSubnetRoutes = slices.Clone(in.HNS.Network.RemoteSubnetRoutes)
	c.SetNode(in.NodeName, in.Config, nil, in.HNS)
	if c.everything || len(c.dirty) > 0 {
		t.Errorf("the same network read again marks services to recompute (everything %v, %d dirty)", c.everything, len(c.dirty))
	}
	c.Desired()

	in.HNS.Network.RemoteSubnetRoutes = slices.Clone(in.HNS.Network.RemoteSubnetRoutes)
	in.HNS.Network.RemoteSubnetRoutes[0].ProviderAddress = ip("10.0.0.4")
	c.SetNode(in.NodeName, in.Config, nil, in.HNS)
	if !c.everything {
		t.Error("a route's new provider address after the network was read again is not seen")
	}
	d, full := c.Desired(), Compute(in)
	if diff := cmp.Diff(remotes(full), remotes(d)); diff != "" {
		t.Errorf("remote endpoints differ from a full computation (-full +incremental):\n%s", diff)
	}
}

func TestComputeIsDeterministic(t *testing.T) {
	in := Input{NodeName: nodeName, Config: withHC(config(true)), HNS: view(true, ws2022, sourceVIPEP(), rootEP("192.168.1.1"), localEP("EP-L1", "192.168.1.5")),
		Services: []*corev1.Service{service("svc1", testbuild.LoadBalancer(3001, "11.21.31.41")), service("svc2", testbuild.ClusterIPs("10.20.30.42"), testbuild.LoadBalancer(3002, "11.21.31.41"))},
		EndpointSlices: []*discoveryv1.EndpointSlice{
			slice("svc1", "b", 80, testbuild.Endpoint("192.168.2.3", "node-2")), slice("svc1", "a", 80, testbuild.Endpoint("192.168.1.5", nodeName)),
			slice("svc2", "c", 80, testbuild.Endpoint("192.168.2.4", "node-2")),
		}}
	first := Compute(in)
	// Reverse every input order.
	rev := in
	rev.Services = []*corev1.Service{in.Services[1], in.Services[0]}
	rev.EndpointSlices = []*discoveryv1.EndpointSlice{in.EndpointSlices[2], in.EndpointSlices[1], in.EndpointSlices[0]}
	second := Compute(rev)
	if diff := cmp.Diff(lbs(first), lbs(second)); diff != "" {
		t.Errorf("input order changed the result (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(remotes(first), remotes(second)); diff != "" {
		t.Errorf("input order changed remotes (-first +second):\n%s", diff)
	}
}

// TestIncrementalEqualsCompute drives an Incremental through random
// changes of random clusters (services of every kind sharing frontends,
// endpoints in every state and with topology hints, local HNS endpoints
// coming and going, node settings and the node's zone changing) and checks after every step that it equals Compute
// over the same inputs, given in shuffled order and with stale versions of
// some objects listed before the current ones.
func TestIncrementalEqualsCompute(t *testing.T) {
	for seed := range uint64(60) {
		r := rand.New(rand.NewPCG(seed, 7))
		w := newRandomWorld(r)
		inc := NewIncremental()
		for _, n := range w.nodes {
			inc.SetClusterNode(n)
		}
		inc.SetNode(nodeName, w.cfg, w.node, w.view)
		for _, s := range w.services {
			inc.SetService(s)
		}
		for _, s := range w.slices {
			inc.SetEndpointSlice(s)
		}
		var before *Desired
		for step := range 12 {
			if step > 0 {
				w.change(inc)
			}
			got := inc.Desired()
			want := Compute(w.input())
			if diff := cmp.Diff(summary(want), summary(got), cmpAddr); diff != "" {
				t.Fatalf("seed %d, step %d: Incremental differs from Compute (-compute +incremental):\n%s", seed, step, diff)
			}
			for _, d := range []*Desired{want, got} {
				checkReasons(t, fmt.Sprintf("seed %d, step %d", seed, step), d)
			}
			if before != nil {
				checkChanges(t, fmt.Sprintf("seed %d, step %d", seed, step), before, got, inc.Changes())
			}
			checkAddrs(t, fmt.Sprintf("seed %d, step %d", seed, step), inc)
			before = snapshot(got)
		}
	}
}

// checkAddrs fails unless the per-address state is exactly what the services' kept results
// say: no entry for an address nobody uses any more (it would be kept forever), none missing.
func checkAddrs(t *testing.T, step string, inc *Incremental) {
	t.Helper()
	type use struct {
		lookers             []string
		backend, serviceVIP int32
	}
	want := map[netip.Addr]use{}
	for k, r := range inc.results {
		for ip, ref := range r.addrs.all() {
			u := want[ip]
			if ref.lookedUp {
				u.lookers = append(u.lookers, k)
			}
			switch ref.remote {
			case backendRemote:
				u.backend++
			case serviceVIPRemote:
				u.serviceVIP++
			}
			want[ip] = u
		}
	}
	if len(want) != inc.addrs.Len() {
		t.Fatalf("%s: %d addresses kept, the results use %d", step, inc.addrs.Len(), len(want))
	}
	for ip, w := range want {
		g, ok := inc.addrs.Get(ip)
		lookers := inc.lookers.of(ip, g)
		if !ok || g.backend != w.backend || g.serviceVIP != w.serviceVIP || !sameElements(lookers, w.lookers) {
			t.Fatalf("%s: address %v kept as %+v (looked up by %q), the results say %+v", step, ip, g, lookers, w)
		}
	}
	// An address's other lookers are kept only while it has a first one.
	for ip := range inc.lookers.more.All() {
		if inc.addrs.At(ip).looker == 0 {
			t.Fatalf("%s: address %v has other lookers and no first one", step, ip)
		}
	}
	// Every number names a service with a contribution that holds it, and only a free number
	// names none.
	numbered := 0
	for k, r := range inc.results {
		if r.looker != 0 {
			numbered++
			if inc.lookers.names[r.looker-1] != k {
				t.Fatalf("%s: %s holds number %d, which names %q", step, k, r.looker, inc.lookers.names[r.looker-1])
			}
		}
	}
	if numbered+len(inc.lookers.free) != len(inc.lookers.names) {
		t.Fatalf("%s: %d numbers held and %d free of %d", step, numbered, len(inc.lookers.free), len(inc.lookers.names))
	}
}

func sameElements(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// checkReasons fails unless the problems d says it has are those it lists.
func checkReasons(t *testing.T, step string, d *Desired) {
	t.Helper()
	listed := func(reason string) bool {
		return slices.ContainsFunc(d.Problems(), func(p Problem) bool { return p.Reason == reason })
	}
	if got, want := d.MissesLocalEndpoint(), listed(v1alpha1.ReasonLocalEndpointNotFound); got != want {
		t.Fatalf("%s: MissesLocalEndpoint() = %v, but the problems %v", step, got, d.Problems())
	}
	if got, want := d.MissesRoute(), listed(v1alpha1.ReasonNoRemoteSubnetRoute); got != want {
		t.Fatalf("%s: MissesRoute() = %v, but the problems %v", step, got, d.Problems())
	}
}

// checkChanges fails unless changes names every load balancer and remote
// endpoint that differs between before and after: an applier that programs
// only those must reach after.
func checkChanges(t *testing.T, step string, before, after *Desired, changes Changes) {
	t.Helper()
	if changes.Everything {
		return
	}
	// The count of services routed by topology follows the services; the
	// rest of Effective is the node's.
	be, ae := before.Effective, after.Effective
	be.TopologyRoutedServices, ae.TopologyRoutedServices = 0, 0
	if !reflect.DeepEqual(be, ae) || !reflect.DeepEqual(before.SourceVIPEndpoint, after.SourceVIPEndpoint) {
		t.Fatalf("%s: the effective settings or the source VIP changed without Everything:\n%s\n%s", step, cmp.Diff(be, ae), cmp.Diff(before.SourceVIPEndpoint, after.SourceVIPEndpoint, cmpAddr))
	}
	for k := range mergedKeys(before.LoadBalancers, after.LoadBalancers) {
		b, inB := before.LoadBalancers[k]
		a, inA := after.LoadBalancers[k]
		if (inA != inB || !reflect.DeepEqual(a, b)) && !slices.Contains(changes.LoadBalancers, k) {
			t.Fatalf("%s: load balancer %v changed (%v -> %v) but Changes does not name it", step, k, b, a)
		}
	}
	bm, am := maps.Collect(before.RemoteEndpoints.All()), maps.Collect(after.RemoteEndpoints.All())
	if n := after.RemoteEndpoints.Len(); n != len(am) {
		t.Fatalf("%s: %d remote endpoints counted, %d listed", step, n, len(am))
	}
	for ip := range mergedKeys(bm, am) {
		b, inB := bm[ip]
		a, inA := am[ip]
		if g, ok := after.RemoteEndpoints.Get(ip); ok != inA || g != a || after.RemoteEndpoints.Has(ip) != inA {
			t.Fatalf("%s: remote endpoint %v got as %v, %v (has: %v); listed as %v, %v", step, ip, g, ok, after.RemoteEndpoints.Has(ip), a, inA)
		}
		if (inA != inB || a != b) && !slices.Contains(changes.RemoteEndpoints, ip) {
			t.Fatalf("%s: remote endpoint %v changed (%v -> %v) but Changes does not name it", step, ip, b, a)
		}
	}
}

func mergedKeys[K comparable, V any](a, b map[K]V) map[K]struct{} {
	out := map[K]struct{}{}
	for k := range a {
		out[k] = struct{}{}
	}
	for k := range b {
		out[k] = struct{}{}
	}
	return out
}

// snapshot copies what a Desired says, which the next Desired call changes
// in place.
func snapshot(d *Desired) *Desired {
	c := *d
	c.LoadBalancers = maps.Clone(d.LoadBalancers)
	c.RemoteEndpoints = RemoteEndpointMap(maps.Collect(d.RemoteEndpoints.All()))
	if d.SourceVIPEndpoint != nil {
		v := *d.SourceVIPEndpoint
		c.SourceVIPEndpoint = &v
	}
	return &c
}

// desiredSummary is everything a Desired says, comparable.
type desiredSummary struct {
	LBs, Remotes []string
	Problems     []Problem
	SourceVIP    *SourceVIPEndpoint
	Effective    Effective
}

func summary(d *Desired) desiredSummary {
	return desiredSummary{lbs(d), remotes(d), d.Problems(), d.SourceVIPEndpoint, d.Effective}
}

// randomWorld is a small random cluster: few addresses, ports and names, so
// that services collide on frontends and share endpoints.
type randomWorld struct {
	r     *rand.Rand
	cfg   v1alpha1.ResolvedProxyConfig
	view  HNSView
	node  *corev1.Node
	nodes []*corev1.Node
	// versions numbers the views' endpoints.
	versions uint64
	services map[string]*corev1.Service
	slices   map[string]*discoveryv1.EndpointSlice
	// stale are earlier versions of objects, listed before the current ones.
	staleServices []*corev1.Service
	staleSlices   []*discoveryv1.EndpointSlice
}

func newRandomWorld(r *rand.Rand) *randomWorld {
	w := &randomWorld{r: r, services: map[string]*corev1.Service{}, slices: map[string]*discoveryv1.EndpointSlice{}}
	w.cfg = config(r.IntN(2) == 0)
	w.cfg.DualStack = r.IntN(3) == 0
	w.cfg.NodeIPs = []string{nodeIP, "fd00:10::1"}
	if r.IntN(2) == 0 {
		w.cfg.HealthCheck = v1alpha1.HealthCheckSpec{ForwardVIP: true, RootEndpointName: "cbr0"}
	}
	w.cfg.FeatureGates = map[string]bool{featuregate.PreferSameTrafficDistribution: r.IntN(2) == 0}
	if r.IntN(5) == 0 {
		w.cfg.FeatureGates[featuregate.AllowServiceExternalIPs] = false
	}
	w.cfg.TopologyAwareRouting = r.IntN(4) > 0
	w.node = w.randomNode()
	other := testbuild.Node("node-3", testbuild.PodCIDRs("192.168.3.0/24"))
	w.nodes = []*corev1.Node{other}
	w.view = w.randomView()
	for i := range 6 {
		w.setService(w.randomService(i))
	}
	for i := range 6 {
		for _, n := range []string{"a", "b"} {
			if r.IntN(3) > 0 {
				w.setSlice(w.randomSlice(i, n))
			}
		}
	}
	return w
}

func (w *randomWorld) pick(xs ...string) string { return xs[w.r.IntN(len(xs))] }

// randomNode is this node in one of the zones the hints name, in another,
// or without a zone label.
func (w *randomWorld) randomNode() *corev1.Node {
	return testbuild.Node(nodeName, testbuild.Zone(w.pick("zone-a", "zone-a", "zone-b", "zone-c", "")))
}

// randomHints gives the slice's endpoints topology hints, as the
// EndpointSlice controller does for trafficDistribution, now and then
// leaving one out.
func (w *randomWorld) randomHints(s *discoveryv1.EndpointSlice) {
	r := w.r
	if r.IntN(5) == 0 {
		return
	}
	for i := range s.Endpoints {
		if r.IntN(12) == 0 {
			continue
		}
		h := &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: w.pick("zone-a", "zone-b")}}}
		if r.IntN(4) == 0 {
			h.ForZones = append(h.ForZones, discoveryv1.ForZone{Name: "zone-c"})
		}
		if r.IntN(2) == 0 {
			h.ForNodes = []discoveryv1.ForNode{{Name: deref(s.Endpoints[i].NodeName)}}
		}
		s.Endpoints[i].Hints = h
	}
}

func (w *randomWorld) randomView() HNSView {
	r := w.r
	caps := []hns.Capabilities{ws2019, ws2022, noDSR, hns.CapabilitiesFor(hns.Version{Major: 15, Minor: 5})}[r.IntN(4)]
	v := view(r.IntN(2) == 0, caps)
	// Service VIPs' remote endpoints carry the host's MAC, which an Incremental reads when asked.
	v.HostMAC = w.pick(hostMAC, hostMAC, "00-15-5D-AA-BB-CD")
	if r.IntN(2) == 0 {
		v.Endpoints = append(v.Endpoints, sourceVIPEP())
	}
	if r.IntN(3) > 0 {
		v.Endpoints = append(v.Endpoints, rootEP("192.168.1.1", "fd01::1"))
	}
	for i := range 4 {
		if r.IntN(2) == 0 {
			id := fmt.Sprintf("EP-%d-%d", i, r.IntN(2))
			v.Endpoints = append(v.Endpoints, localEP(id, fmt.Sprintf("192.168.1.%d", 5+i), fmt.Sprintf("fd01::%d", 5+i)))
		}
	}
	if r.IntN(4) == 0 {
		v.Endpoints = append(v.Endpoints, hns.Endpoint{ID: "EP-R", Remote: true, IPs: []netip.Addr{ip("192.168.2.3")}})
	}
	v.Found = r.IntN(10) > 0
	if r.IntN(2) == 0 {
		// As the applier numbers its views: a new version for new endpoints.
		w.versions++
		v.EndpointsVersion = w.versions
	}
	return v
}

// changeNodes adds, removes or renumbers another node, or lists this node
// itself (whose pod CIDR the engine skips), and tells inc.
func (w *randomWorld) changeNodes(inc *Incremental) {
	r := w.r
	switch r.IntN(4) {
	case 0:
		n := testbuild.Node(fmt.Sprintf("node-%d", 4+r.IntN(3)), testbuild.PodCIDRs(w.pick("192.168.4.0/24", "192.168.2.0/24", "192.168.0.0/16")))
		w.nodes = append(slices.DeleteFunc(w.nodes, func(o *corev1.Node) bool { return o.Name == n.Name }), n)
		inc.SetClusterNode(n)
	case 1:
		if len(w.nodes) > 0 {
			gone := w.nodes[r.IntN(len(w.nodes))]
			w.nodes = slices.DeleteFunc(w.nodes, func(o *corev1.Node) bool { return o == gone })
			inc.DeleteClusterNode(gone.Name)
		}
	case 2:
		self := testbuild.Node(nodeName, testbuild.PodCIDRs("192.168.1.0/24"))
		w.nodes = append(slices.DeleteFunc(w.nodes, func(o *corev1.Node) bool { return o.Name == nodeName }), self)
		inc.SetClusterNode(self)
	case 3:
		// An update that changes no pod CIDR.
		for _, n := range w.nodes {
			inc.SetClusterNode(n)
		}
	}
	inc.SetNode(nodeName, w.cfg, w.node, w.view)
}

func (w *randomWorld) randomService(i int) *corev1.Service {
	r := w.r
	name := fmt.Sprintf("svc%d", i)
	cip := fmt.Sprintf("10.20.30.%d", 40+r.IntN(6))
	opts := []testbuild.ServiceOption{testbuild.ClusterIPs(cip, fmt.Sprintf("fd00:20::%d", 40+r.IntN(6)))}
	switch r.IntN(6) {
	case 0:
		opts = append(opts, testbuild.NodePort(int32(3000+r.IntN(3))))
	case 1, 2:
		opts = append(opts, testbuild.LoadBalancer(int32(3000+r.IntN(3)), w.pick("11.21.31.41", "11.21.31.42"), w.pick("fd00::1", "11.21.31.41")))
	case 3:
		opts = append(opts, testbuild.ClusterIPs(corev1.ClusterIPNone))
	}
	if r.IntN(3) == 0 {
		opts = append(opts, testbuild.ExternalIPs(w.pick("50.0.0.1", "50.0.0.2", "fd50::1")))
	}
	if r.IntN(3) == 0 {
		opts = append(opts, testbuild.ExternalTrafficLocal())
	}
	if r.IntN(4) == 0 {
		opts = append(opts, testbuild.InternalTrafficLocal())
	}
	if r.IntN(4) == 0 {
		opts = append(opts, testbuild.ClientIPAffinity())
	}
	if r.IntN(4) == 0 {
		opts = append(opts, testbuild.ServiceAnnotation(AnnotationPreserveDestination, "true"))
	}
	if r.IntN(5) == 0 {
		opts = append(opts, testbuild.ServiceAnnotation(AnnotationWinProxyOptimization, "disabled"))
	}
	if r.IntN(4) == 0 {
		opts = append(opts, withHealthCheckNodePort(32000))
	}
	s := service(name, opts...)
	if r.IntN(3) == 0 {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "p81", Port: 81, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")})
	}
	if r.IntN(4) == 0 {
		s.Spec.Ports[0].TargetPort = intstr.FromString("http")
	}
	if r.IntN(8) == 0 {
		proxy := corev1.LoadBalancerIPModeProxy
		s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: "11.21.31.43", IPMode: &proxy})
	}
	return s
}

func (w *randomWorld) randomSlice(svc int, name string) *discoveryv1.EndpointSlice {
	r := w.r
	at, ipf := discoveryv1.AddressTypeIPv4, "192.168.%d.%d"
	if r.IntN(4) == 0 {
		at, ipf = discoveryv1.AddressTypeIPv6, "fd0%d::%d"
	}
	var eps []testbuild.SliceOption
	for range r.IntN(5) {
		subnet := []int{1, 1, 2, 3, 9}[r.IntN(5)]
		node := w.pick(nodeName, "node-2", "node-3", "")
		if subnet == 1 {
			node = nodeName
		}
		eps = append(eps, testbuild.Endpoint(fmt.Sprintf(ipf, subnet, 3+r.IntN(6)), node, testbuild.Conditions(w.pick("", "", "-r+s+t", "-r-s+t", "-r+s-t", "-r-s-t"))))
	}
	s := sliceFam(fmt.Sprintf("svc%d", svc), fmt.Sprintf("svc%d-%s", svc, name), at, int32(8080+r.IntN(2)), eps...)
	if r.IntN(3) == 0 {
		pn, proto, port := "p81", corev1.ProtocolUDP, int32(53)
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: &pn, Protocol: &proto, Port: &port})
	}
	if r.IntN(10) == 0 {
		delete(s.Labels, discoveryv1.LabelServiceName)
	}
	w.randomHints(s)
	return s
}

func (w *randomWorld) setService(s *corev1.Service) {
	if old, ok := w.services[s.Name]; ok && w.r.IntN(3) == 0 {
		w.staleServices = append(w.staleServices, old)
	}
	w.services[s.Name] = s
}

func (w *randomWorld) setSlice(s *discoveryv1.EndpointSlice) {
	if old, ok := w.slices[s.Name]; ok && w.r.IntN(3) == 0 {
		w.staleSlices = append(w.staleSlices, old)
	}
	w.slices[s.Name] = s
}

// change makes one random change, to the world and to inc.
func (w *randomWorld) change(inc *Incremental) {
	r := w.r
	for range 1 + r.IntN(3) {
		i := r.IntN(7)
		switch r.IntN(9) {
		case 0:
			s := w.randomService(i)
			w.setService(s)
			inc.SetService(s)
		case 1:
			name := fmt.Sprintf("svc%d", i)
			delete(w.services, name)
			w.staleServices = slices.DeleteFunc(w.staleServices, func(s *corev1.Service) bool { return s.Name == name })
			inc.DeleteService("ns", name)
		case 2, 3:
			s := w.randomSlice(i, w.pick("a", "b"))
			w.setSlice(s)
			inc.SetEndpointSlice(s)
		case 4:
			name := fmt.Sprintf("svc%d-%s", i, w.pick("a", "b"))
			delete(w.slices, name)
			w.staleSlices = slices.DeleteFunc(w.staleSlices, func(s *discoveryv1.EndpointSlice) bool { return s.Name == name })
			inc.DeleteEndpointSlice("ns", name)
		case 5:
			if r.IntN(3) > 0 {
				w.view = w.randomView()
			}
			if r.IntN(4) == 0 {
				w.cfg.EnableDSR = !w.cfg.EnableDSR
			}
			if r.IntN(4) == 0 {
				w.cfg.TopologyAwareRouting = !w.cfg.TopologyAwareRouting
			}
			if r.IntN(4) == 0 {
				// Service VIPs' remote endpoints carry the node IP as provider address.
				w.cfg.NodeIPs = []string{w.pick(nodeIP, "10.0.0.5"), "fd00:10::1"}
			}
			inc.SetNode(nodeName, w.cfg, w.node, w.view)
		case 6:
			// The node moves to another zone, nothing else changes.
			w.node = w.randomNode()
			inc.SetNode(nodeName, w.cfg, w.node, w.view)
		case 7:
			// The same view again, as an event-triggered sync sees it.
			inc.SetNode(nodeName, w.cfg, w.node, w.view)
		case 8:
			w.changeNodes(inc)
		}
	}
}

// input is the world as Compute's input: stale versions first, the rest
// shuffled.
func (w *randomWorld) input() Input {
	in := Input{NodeName: nodeName, Config: w.cfg, Node: w.node, Nodes: shuffled(w.r, slices.Clone(w.nodes)), HNS: w.view}
	in.Services = append(slices.Clone(w.staleServices), shuffled(w.r, slices.Collect(maps.Values(w.services)))...)
	in.EndpointSlices = append(slices.Clone(w.staleSlices), shuffled(w.r, slices.Collect(maps.Values(w.slices)))...)
	return in
}

func shuffled[T any](r *rand.Rand, xs []T) []T {
	r.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	return xs
}
