package apply

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/engine/enginetest"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/agent/ownership"
)

// The rank rule, one row each: which Service's load balancers the first
// sync of a start programs first.
func TestFirstSyncRanks(t *testing.T) {
	lb := func(service string, local ...bool) engine.LoadBalancer {
		out := engine.LoadBalancer{Key: engine.LBKey{Family: engine.FamilyIPv4, Kind: engine.KindClusterIP, Service: service}}
		for _, l := range local {
			out.Backends = append(out.Backends, engine.Backend{Local: l})
		}
		return out
	}
	for _, tc := range []struct {
		rule string
		dns  string // WithClusterDNS; empty: the default
		lb   engine.LoadBalancer
		want Rank
	}{
		{"the cluster's DNS Service comes first", "", lb("kube-system/kube-dns", false), RankClusterDNS},
		{"the DNS Service is the one the agent is told", "kube-system/coredns", lb("kube-system/coredns", false), RankClusterDNS},
		{"kube-dns is not the DNS Service when the agent is told another", "kube-system/coredns", lb("kube-system/kube-dns", false), RankOther},
		{"the DNS Service comes first even with a local backend", "", lb("kube-system/kube-dns", true), RankClusterDNS},
		{"the API server's Service comes next", "", lb("default/kubernetes", false), RankAPIServer},
		{"a Service with a backend on this node comes next", "", lb("ns/web", false, true), RankLocalEndpoints},
		{"a Service with only remote backends comes last", "", lb("ns/web", false, false), RankOther},
		{"a Service without backends comes last", "", lb("ns/web"), RankOther},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			var opts []Option
			if tc.dns != "" {
				opts = append(opts, WithClusterDNS(tc.dns))
			}
			ledger, err := ownership.OpenLedger("")
			if err != nil {
				t.Fatal(err)
			}
			if got := New(sim.MustNew(), ledger, opts...).rank(&tc.lb); got != tc.want {
				t.Errorf("rank = %s, want %s", got, tc.want)
			}
		})
	}
}

// The first sync's plans, in the planner's table style: the same world
// planned as the first sync of a start and as a later one. The backends
// are the CNI's endpoints, so that the planner, which executes nothing,
// builds every load balancer; that a first sync creates the critical
// Services' endpoints first is TestFirstSyncProgramsCriticalServicesFirst's.
func TestFirstSyncPlan(t *testing.T) {
	dnsIP, otherIP := netip.MustParseAddr("192.168.2.8"), netip.MustParseAddr("192.168.2.9")
	dnsKey := engine.LBKey{Family: engine.FamilyIPv4, Kind: engine.KindClusterIP, Service: "kube-system/kube-dns", Port: "dns",
		VIP: netip.MustParseAddr("10.96.0.53"), Protocol: 17, ExternalPort: 53}
	dns := engine.LoadBalancer{Key: dnsKey, InternalPort: 53, Backends: []engine.Backend{{IP: dnsIP}}}
	// app/other comes first in key order.
	otherKey := svcKey
	otherKey.Service, otherKey.VIP = "app/other", netip.MustParseAddr("10.96.0.11")
	other := engine.LoadBalancer{Key: otherKey, InternalPort: 8080, Backends: []engine.Backend{{IP: otherIP}}}
	cni := []hns.Endpoint{{ID: "CNI-DNS", Name: "cni", IPs: []netip.Addr{dnsIP}, Remote: true},
		{ID: "CNI-OTHER", Name: "cni", IPs: []netip.Addr{otherIP}, Remote: true}}
	world := func(first bool) planWorld {
		return planWorld{first: first, eps: cni, d: withRemote(desired(other, wantedLB, dns),
			engine.RemoteEndpoint{IP: dnsIP}, engine.RemoteEndpoint{IP: otherIP})}
	}
	blocked := world(true)
	blocked.lbs = []hns.LoadBalancer{{ID: "KUBEPROXY", FrontendVIPs: []netip.Addr{dnsKey.VIP},
		PortMapping: hns.PortMapping{Protocol: 17, InternalPort: 53, ExternalPort: 53}, BackendEndpointIDs: []string{"POD"}}}
	own := world(true)
	own.lbs = []hns.LoadBalancer{hnsLB("LB1", "POD")}
	own.prepare = ours(hnsLB("LB1", "POD"))
	create := func(key engine.LBKey) string {
		return "CreateLoadBalancer load balancer " + key.String() + " LoadBalancerMissing"
	}
	for _, tc := range []struct {
		rule  string
		world planWorld
		want  []string
	}{
		{"a first sync programs DNS, then the Services with local endpoints, then the rest", world(true),
			[]string{create(dnsKey), create(svcKey), create(otherKey)}},
		{"a later sync programs in key order", world(false),
			[]string{create(otherKey), create(dnsKey), create(svcKey)}},
		{"a first sync leaves a critical load balancer whose frontend another holds to the load-balancer phase", blocked,
			[]string{create(svcKey), create(otherKey), create(dnsKey)}},
		{"a restart that finds its own load balancers programs in key order", own,
			[]string{create(otherKey), create(dnsKey)}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			got, _ := tc.world.plan(t)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// The critical Services of withCriticalServices' clusters.
var (
	clusterDNSVIP = netip.MustParseAddr("10.95.0.10")
	apiServerVIP  = netip.MustParseAddr("10.95.0.1")
)

// withCriticalServices is cl with the two Services every cluster has: the
// DNS Service (kube-system/kube-dns, three ports, two CoreDNS pods on other
// nodes) and default/kubernetes (the API server on three other nodes' host
// addresses).
func withCriticalServices(cl *enginetest.Cluster) *enginetest.Cluster {
	out := *cl
	dns := critical("kube-system", "kube-dns", clusterDNSVIP,
		[]corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", Port: 9153, Protocol: corev1.ProtocolTCP}})
	api := critical("default", "kubernetes", apiServerVIP,
		[]corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(6443)}})
	pods := []netip.Addr{cl.PodIPOf(1, enginetest.FreePodIndex+1), cl.PodIPOf(2, enginetest.FreePodIndex+1)}
	out.Services = append(slices.Clone(cl.Services), dns, api)
	out.EndpointSlices = append(slices.Clone(cl.EndpointSlices),
		criticalSlice(dns, []int32{53, 53, 9153}, pods, []string{enginetest.NodeName(1), enginetest.NodeName(2)}),
		criticalSlice(api, []int32{6443}, []netip.Addr{enginetest.NodeIP(1), enginetest.NodeIP(2), enginetest.NodeIP(3)}, nil))
	return &out
}

func critical(ns, name string, vip netip.Addr, ports []corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: vip.String(), ClusterIPs: []string{vip.String()}, Ports: ports}}
}

// criticalSlice is svc's EndpointSlice: its ports on targets, at ips, on
// nodes (none: not pods).
func criticalSlice(svc *corev1.Service, targets []int32, ips []netip.Addr, nodes []string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for i, p := range svc.Spec.Ports {
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: new(p.Name), Port: new(targets[i]), Protocol: new(p.Protocol)})
	}
	for i, ip := range ips {
		e := discoveryv1.Endpoint{Addresses: []string{ip.String()}, Conditions: discoveryv1.EndpointConditions{Ready: new(true)}}
		if nodes != nil {
			e.NodeName = new(nodes[i])
		}
		s.Endpoints = append(s.Endpoints, e)
	}
	return s
}

// created is a load balancer HNS created, when (on the simulator's
// virtual clock, if it has one), and how many endpoints HNS had created by
// then.
type created struct {
	vip       netip.Addr
	at        time.Duration
	endpoints int
}

// lbLog is an HNS that logs the load balancers it creates, in order, and
// counts the endpoints.
type lbLog struct {
	hns.Client
	clock     *sim.VirtualClock
	created   []created
	endpoints int
}

func (l *lbLog) CreateEndpoint(ctx context.Context, network string, ep hns.Endpoint) (hns.Endpoint, error) {
	got, err := l.Client.CreateEndpoint(ctx, network, ep)
	if err == nil {
		l.endpoints++
	}
	return got, err
}

func (l *lbLog) CreateLoadBalancer(ctx context.Context, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	got, err := l.Client.CreateLoadBalancer(ctx, lb)
	if err == nil {
		c := created{vip: lb.VIP(), endpoints: l.endpoints}
		if l.clock != nil {
			c.at = l.clock.Elapsed()
		}
		l.created = append(l.created, c)
	}
	return got, err
}

// firstSync is a new agent's first sync of cl on a fresh host, with the
// critical Services first or (keyOrder) in the phases' order; it returns
// the host's log and calls. latency, if not zero, is every call's, on a
// virtual clock.
func firstSync(tb testing.TB, cl *enginetest.Cluster, keyOrder bool, latency time.Duration) (*lbLog, *sim.Sim, *Applier) {
	tb.Helper()
	host, err := cl.Host(sim.WS2022)
	if err != nil {
		tb.Fatal(err)
	}
	log := &lbLog{Client: host}
	if latency > 0 {
		log.clock = &sim.VirtualClock{}
		host.SetVirtualClock(log.clock)
		host.SetLatency(latency)
	}
	ledger, err := ownership.OpenLedger("")
	if err != nil {
		tb.Fatal(err)
	}
	a := New(log, ledger)
	a.starting = !keyOrder
	eng := cl.Incremental()
	r, err := a.fullSync(eng, cl)
	if err != nil || r.Skipped != "" || len(r.Failures) > 0 || r.LBsFailed > 0 {
		tb.Fatalf("first sync: %v, skipped %q, failures %v, %d of %d LBs failed", err, r.Skipped, r.Failures, r.LBsFailed, r.LBsDesired)
	}
	return log, host, a
}

// fullSync lists HNS, computes cl's Desired and programs it, as the agent's
// sync after a start does (apply.Sync: List).
func (a *Applier) fullSync(eng *engine.Incremental, cl *enginetest.Cluster) (Result, error) {
	o, err := a.Observe(context.Background(), cl.Network.Name, enginetest.HostMAC)
	if err != nil {
		return Result{}, err
	}
	eng.SetNode(cl.NodeName, cl.Config, cl.Nodes[0], o.View)
	return a.Apply(context.Background(), o, eng.Desired())
}

// On a fresh host, the first sync creates the DNS Service's and the API
// server's load balancers before any other, with the same HNS calls as in
// the phases' order; a later sync that recreates load balancers keeps that
// order.
func TestFirstSyncProgramsCriticalServicesFirst(t *testing.T) {
	cl := withCriticalServices(enginetest.Winkernel(200, true, false))
	log, host, a := firstSync(t, cl, false, 0)
	critical := []netip.Addr{clusterDNSVIP, clusterDNSVIP, clusterDNSVIP, apiServerVIP}
	if got := vips(log.created[:4]); !slices.Equal(got, critical) {
		t.Errorf("first load balancers created: %v, want the DNS Service's three, then the API server's", got)
	}
	// Before them, only the source VIP's endpoint and theirs: two CoreDNS
	// pods, three API servers.
	if n := log.created[3].endpoints; n != 1+2+3 {
		t.Errorf("%d endpoints created before the critical load balancers, want 6", n)
	}
	if n := len(log.created); n != 204 {
		t.Errorf("%d load balancers created, want 204", n)
	}
	keyLog, keyHost, _ := firstSync(t, cl, true, 0)
	if got, want := host.Counts().Calls, keyHost.Counts().Calls; !cmp.Equal(got, want) {
		t.Errorf("HNS calls of the first sync %v, in the phases' order %v", got, want)
	}

	// Every load balancer deleted behind the agent's back: the next sync
	// lists, and creates them again in the phases' order.
	st, err := host.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, lb := range st.LoadBalancers {
		if err := host.DeleteLoadBalancer(context.Background(), lb.ID); err != nil {
			t.Fatal(err)
		}
	}
	log.created = nil
	if _, err := a.fullSync(cl.Incremental(), cl); err != nil {
		t.Fatal(err)
	}
	if got, want := vips(log.created), vips(keyLog.created); !slices.Equal(got, want) {
		t.Errorf("a later sync created load balancers for %v, want the phases' order %v", got, want)
	}
}

func vips(cs []created) []netip.Addr {
	out := make([]netip.Addr, len(cs))
	for i, c := range cs {
		out[i] = c.vip
	}
	return out
}
