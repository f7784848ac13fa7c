package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

func dualStackConfig(dsr bool) v1alpha1.ResolvedProxyConfig {
	c := withHC(config(dsr))
	c.DualStack = true
	c.NodeIPs = []string{nodeIP, "fd00:10::1"}
	return c
}

func dualStackService(opts ...svcOpt) *corev1.Service {
	return service("svc1", append([]svcOpt{clusterIPs("10.20.30.41", "fd00:20::41"), loadBalancer(3001, "11.21.31.41", "fd00::1")}, opts...)...)
}

func TestMoreProgrammingScenarios(t *testing.T) {
	remote := func(svc string) *discoveryv1.EndpointSlice {
		return slice(svc, svc+"-a", 80, ep{"192.168.2.3", "node-2", ""})
	}
	lbSvc := func(opts ...svcOpt) *corev1.Service {
		return service("svc1", append([]svcOpt{loadBalancer(3001, "11.21.31.41")}, opts...)...)
	}
	local5 := localEP("EP-L1", "192.168.1.5")
	dsLocal := localEP("EP-L", "192.168.1.5", "fd01::5")
	dsRoot := rootEP("192.168.1.1", "fd01::1")
	terminatingSvc := func(opts ...svcOpt) *corev1.Service {
		return service("svc1", append([]svcOpt{loadBalancer(3001, "20.0.0.10"), externalIPs("50.0.0.1")}, opts...)...)
	}
	terminatingSlices := []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80,
		ep{"192.168.1.10", nodeName, "-r+s+t"}, ep{"192.168.1.11", nodeName, "-r-s+t"}, ep{"192.168.2.3", "node-2", ""})}
	terminatingView := view(false, ws2022, localEP("EP-A", "192.168.1.10"), localEP("EP-B", "192.168.1.11"), rootEP("192.168.1.1"))
	noHC := config(false)
	noHC.HealthCheck.ForwardVIP = false
	run(t, []scenario{
		{
			name: "scenario-28-dual-stack-etp-local-dsr", cfg: dualStackConfig(true), view: view(false, ws2022, dsLocal, dsRoot),
			svcs: []*corev1.Service{dualStackService(etpLocal)},
			slices: []*discoveryv1.EndpointSlice{
				sliceFam("svc1", "s4", discoveryv1.AddressTypeIPv4, 80, ep{"192.168.1.5", nodeName, ""}),
				sliceFam("svc1", "s6", discoveryv1.AddressTypeIPv6, 80, ep{"fd01::5", nodeName, ""}),
			},
			// Deviation: the v6 health-check LB carries the IPv6 flag (2),
			// which an IPv6 VIP needs; winkernel leaves it at 0.
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=0 svip=- be=[192.168.1.5@EP-L]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=1 pm=18 svip=- be=[192.168.1.5@EP-L]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=16 svip=- be=[192.168.1.5@EP-L]",
				"IPv4/healthcheck 11.21.31.41:10256/TCP int=10256 flags=0 pm=0 svip=- be=[192.168.1.1@EP-GW]",
				"IPv6/clusterip fd00:20::41:80/TCP ns/svc1:p80 int=80 flags=3 pm=0 svip=- be=[fd01::5@EP-L]",
				"IPv6/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=3 pm=18 svip=- be=[fd01::5@EP-L]",
				"IPv6/ingress fd00::1:80/TCP ns/svc1:p80 int=80 flags=3 pm=16 svip=- be=[fd01::5@EP-L]",
				"IPv6/healthcheck fd00::1:10256/TCP int=10256 flags=2 pm=0 svip=- be=[fd01::1@EP-GW]",
			},
		},
		{
			name: "scenario-29-dual-stack-etp-cluster-with-remote-endpoints", cfg: dualStackConfig(false), view: view(false, ws2022, dsLocal, dsRoot),
			svcs: []*corev1.Service{dualStackService()},
			slices: []*discoveryv1.EndpointSlice{
				sliceFam("svc1", "s4", discoveryv1.AddressTypeIPv4, 80, ep{"192.168.1.5", nodeName, ""}, ep{"192.168.2.3", "node-2", ""}),
				sliceFam("svc1", "s6", discoveryv1.AddressTypeIPv6, 80, ep{"fd01::5", nodeName, ""}, ep{"fd02::3", "node-2", ""}),
			},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L 192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.1.5@EP-L 192.168.2.3]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=- be=[192.168.1.5@EP-L 192.168.2.3]",
				"IPv4/healthcheck 11.21.31.41:10256/TCP int=10256 flags=0 pm=0 svip=- be=[192.168.1.1@EP-GW]",
				"IPv6/clusterip fd00:20::41:80/TCP ns/svc1:p80 int=80 flags=2 pm=0 svip=- be=[fd01::5@EP-L fd02::3]",
				"IPv6/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=2 pm=18 svip=- be=[fd01::5@EP-L fd02::3]",
				"IPv6/ingress fd00::1:80/TCP ns/svc1:p80 int=80 flags=2 pm=16 svip=- be=[fd01::5@EP-L fd02::3]",
				"IPv6/healthcheck fd00::1:10256/TCP int=10256 flags=2 pm=0 svip=- be=[fd01::1@EP-GW]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03", "fd02::3 mac=02-11-03-00-00-00"},
		},
		{
			name: "scenario-37-terminating-example-etp-local", cfg: withHC(config(false)), view: terminatingView,
			svcs: []*corev1.Service{terminatingSvc(etpLocal)}, slices: terminatingSlices,
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.10@EP-A 192.168.2.3]",
				"IPv4/ingress 20.0.0.10:80/TCP ns/svc1:p80 int=80 flags=1 pm=16 svip=- be=[192.168.1.10@EP-A]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
		{
			name: "scenario-37-terminating-example-etp-cluster", cfg: withHC(config(false)), view: terminatingView,
			svcs: []*corev1.Service{terminatingSvc()}, slices: terminatingSlices,
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3]",
				"IPv4/externalip 50.0.0.1:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=- be=[192.168.2.3]",
				"IPv4/ingress 20.0.0.10:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=- be=[192.168.2.3]",
				"IPv4/healthcheck 20.0.0.10:10256/TCP int=10256 flags=0 pm=0 svip=- be=[192.168.1.1@EP-GW]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
		{
			name: "scenario-39-preserve-destination", cfg: withHC(config(false)), view: view(false, ws2022, local5, rootEP("192.168.1.1")),
			svcs: []*corev1.Service{lbSvc(annotate(AnnotationPreserveDestination, "true"))},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80,
				ep{"192.168.1.5", nodeName, ""}, ep{"192.168.2.3", "node-2", ""})},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1 192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.1.5@EP-L1]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=28 svip=- be=[192.168.1.5@EP-L1]",
				"IPv4/healthcheck 11.21.31.41:10256/TCP int=10256 flags=0 pm=12 svip=- be=[192.168.1.1@EP-GW]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
		{
			name: "scenario-48-health-check-node-port", cfg: withHC(config(false)), view: view(false, ws2022, local5, rootEP("192.168.1.1")),
			svcs:   []*corev1.Service{lbSvc(etpLocal, func(s *corev1.Service) { s.Spec.HealthCheckNodePort = 32000 })},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, ep{"192.168.1.5", nodeName, ""})},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=1 pm=18 svip=- be=[192.168.1.5@EP-L1]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=16 svip=- be=[192.168.1.5@EP-L1]",
				"IPv4/healthcheck 11.21.31.41:32000/TCP int=32000 flags=0 pm=0 svip=- be=[192.168.1.1@EP-GW]",
			},
		},
		{
			name: "scenario-48-root-endpoint-missing", cfg: withHC(config(false)), view: view(false, ws2022),
			svcs: []*corev1.Service{lbSvc()}, slices: []*discoveryv1.EndpointSlice{remote("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=- be=[192.168.2.3]",
			},
			remotes:  []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
			problems: []string{v1alpha1.ReasonHealthCheckEndpointMissing},
		},
		{
			name: "scenario-48-forward-vip-off", cfg: noHC, view: view(false, ws2022, rootEP("192.168.1.1")),
			svcs: []*corev1.Service{lbSvc()}, slices: []*discoveryv1.EndpointSlice{remote("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=- be=[192.168.2.3]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
		{
			name: "scenario-51-all-terminating-etp-cluster", cfg: withHC(config(false)), view: view(false, ws2022, rootEP("192.168.1.1")),
			svcs: []*corev1.Service{lbSvc(externalIPs("50.0.0.1"))},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80,
				ep{"192.168.2.3", "node-2", "-r+s+t"}, ep{"192.168.2.4", "node-2", "-r+s+t"})},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3 192.168.2.4]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=- be=[192.168.2.3 192.168.2.4]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03", "192.168.2.4 mac=02-11-c0-a8-02-04"},
		},
		{
			name: "itp-local-etp-local-skips-remote-endpoints", cfg: config(false), view: view(false, ws2022, local5),
			svcs: []*corev1.Service{lbSvc(itpLocal, etpLocal)},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80,
				ep{"192.168.1.5", nodeName, ""}, ep{"192.168.2.3", "node-2", ""})},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=1 pm=18 svip=- be=[192.168.1.5@EP-L1]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=16 svip=- be=[192.168.1.5@EP-L1]",
			},
		},
		{
			name: "frontend-conflict-smallest-key-wins", cfg: config(false), view: view(false, ws2022),
			svcs: []*corev1.Service{
				service("svc1", externalIPs("50.0.0.1")),
				service("svc2", clusterIPs("10.20.30.42"), externalIPs("50.0.0.1")),
			},
			slices: []*discoveryv1.EndpointSlice{remote("svc1"), remote("svc2")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/clusterip 10.20.30.42:80/TCP ns/svc2:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/externalip 50.0.0.1:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=- be=[192.168.2.3]",
			},
			remotes:  []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
			problems: []string{"ns/svc2 " + v1alpha1.ReasonFrontendConflict},
		},
		{
			name: "shared-ingress-ip-shares-one-health-check-lb", cfg: withHC(config(false)), view: view(false, ws2022, rootEP("192.168.1.1")),
			svcs: []*corev1.Service{lbSvc(), service("svc2", clusterIPs("10.20.30.42"), loadBalancer(3002, "11.21.31.41"),
				func(s *corev1.Service) { s.Spec.Ports[0].Port = 81 })},
			slices: []*discoveryv1.EndpointSlice{remote("svc1"), remote("svc2")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/clusterip 10.20.30.42:81/TCP ns/svc2:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3002/TCP ns/svc2:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=- be=[192.168.2.3]",
				"IPv4/ingress 11.21.31.41:81/TCP ns/svc2:p80 int=80 flags=0 pm=16 svip=- be=[192.168.2.3]",
				"IPv4/healthcheck 11.21.31.41:10256/TCP int=10256 flags=0 pm=0 svip=- be=[192.168.1.1@EP-GW]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
		{
			name: "local-endpoint-without-hns-endpoint-is-reported", cfg: config(false), view: view(false, ws2022),
			svcs:     []*corev1.Service{service("svc1")},
			slices:   []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, ep{"192.168.1.5", nodeName, ""})},
			problems: []string{"ns/svc1 " + v1alpha1.ReasonLocalEndpointNotFound},
		},
	})
}

func TestNoRemoteSubnetRouteIsReported(t *testing.T) {
	other := &corev1.Node{}
	other.Name, other.Spec.PodCIDRs = "node-3", []string{"192.168.3.0/24"}
	d := Compute(Input{NodeName: nodeName, Config: config(false), Nodes: []*corev1.Node{other},
		HNS:            view(true, ws2022, sourceVIPEP()),
		Services:       []*corev1.Service{service("svc1")},
		EndpointSlices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, ep{"192.168.3.7", "node-3", ""})}})
	want := []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=10.0.0.1 be=[192.168.3.7]"}
	if diff := cmp.Diff(want, lbs(d)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ns/svc1 " + v1alpha1.ReasonNoRemoteSubnetRoute}, reasons(d)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSourceVIPStrategies(t *testing.T) {
	strategy := func(s v1alpha1.SourceVIPStrategy, name, addr string) v1alpha1.ResolvedProxyConfig {
		c := config(false)
		c.SourceVIP = &v1alpha1.ResolvedSourceVIP{Strategy: s, EndpointName: name, Address: addr}
		return c
	}
	calico := localEP("EP-CAL", "192.168.1.9")
	calico.Name = "Calico_ep"
	pod := localEP("EP-POD", sourceVIP)
	typed := config(false)
	typed.Network.Type = v1alpha1.NetworkTypeOverlay
	for _, tc := range []struct {
		name   string
		cfg    v1alpha1.ResolvedProxyConfig
		view   HNSView
		reason string // blocking reason, "" when programmable
		svip   string
		origin v1alpha1.SourceVIPOrigin
		create bool
	}{
		{"endpoint-strategy-reads-the-named-endpoint", strategy(v1alpha1.SourceVIPStrategyEndpoint, "Calico_ep", ""), view(true, ws2022, calico), "", "192.168.1.9", v1alpha1.SourceVIPOriginEndpoint, false},
		{"endpoint-strategy-missing-endpoint", strategy(v1alpha1.SourceVIPStrategyEndpoint, "Calico_ep", ""), view(true, ws2022), v1alpha1.ReasonSourceVIPEndpointMissing, "", v1alpha1.SourceVIPOriginEndpoint, false},
		{"create-strategy-creates", strategy(v1alpha1.SourceVIPStrategyCreate, "", sourceVIP), view(true, ws2022), "", sourceVIP, v1alpha1.SourceVIPOriginCreate, true},
		{"create-strategy-readopts-its-endpoint", strategy(v1alpha1.SourceVIPStrategyCreate, "", sourceVIP), view(true, ws2022, sourceVIPEP()), "", sourceVIP, v1alpha1.SourceVIPOriginCreate, false},
		{"create-strategy-refuses-a-pod-address", strategy(v1alpha1.SourceVIPStrategyCreate, "", sourceVIP), view(true, ws2022, pod), v1alpha1.ReasonSourceVIPConflict, sourceVIP, v1alpha1.SourceVIPOriginCreate, false},
		{"static-strategy-uses-any-holder", config(false), view(true, ws2022, pod), "", sourceVIP, v1alpha1.SourceVIPOriginStatic, false},
		{"network-type-mismatch", typed, view(false, ws2022), v1alpha1.ReasonNetworkTypeMismatch, "", v1alpha1.SourceVIPOriginNone, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Compute(Input{NodeName: nodeName, Config: tc.cfg, HNS: tc.view})
			e := d.Effective
			if got := e.Blocked.Reason; got != tc.reason || e.Programmable != (tc.reason == "") {
				t.Errorf("blocked %q (programmable %v), want %q", got, e.Programmable, tc.reason)
			}
			if tc.reason == "" && (e.SourceVIP.Address != tc.svip || e.SourceVIP.Origin != tc.origin) {
				t.Errorf("source VIP %+v, want %s from %s", e.SourceVIP, tc.svip, tc.origin)
			}
			if (d.SourceVIPEndpoint != nil) != tc.create {
				t.Errorf("source-VIP endpoint to create = %+v, want %v", d.SourceVIPEndpoint, tc.create)
			}
		})
	}
}

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
				Services:       []*corev1.Service{service("svc1", itpLocal)},
				EndpointSlices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, ep{"192.168.1.5", nodeName, ""})}},
			steps: []step{
				{lbs: []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1]"}},
				{do: func(c *Incremental, in *Input) {
					in.HNS.Endpoints = append(in.HNS.Endpoints, l2)
					in.EndpointSlices = []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, ep{"192.168.1.5", nodeName, ""}, ep{"192.168.1.6", nodeName, ""})}
					c.SetNode(in.NodeName, in.Config, nil, nil, in.HNS)
					c.SetEndpointSlice(in.EndpointSlices[0])
				}, lbs: []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1 192.168.1.6@EP-L2]"}},
				{do: func(c *Incremental, in *Input) {
					in.EndpointSlices = append(in.EndpointSlices, slice("svc1", "s2", 80, ep{"192.168.2.3", "node-2", ""}))
					c.SetEndpointSlice(in.EndpointSlices[1])
				}, lbs: []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1 192.168.1.6@EP-L2]"}},
			},
		},
		{
			name: "scenario-19-deleting-one-sharer-keeps-the-remote-endpoint",
			in: Input{NodeName: nodeName, Config: config(false), HNS: view(false, ws2022),
				Services: []*corev1.Service{service("svc1"), service("svc2", clusterIPs("10.20.30.42"))},
				EndpointSlices: []*discoveryv1.EndpointSlice{
					slice("svc1", "s1", 80, ep{"192.168.2.3", "node-2", ""}), slice("svc2", "s2", 80, ep{"192.168.2.3", "node-2", ""})}},
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
				Services: []*corev1.Service{service("svc1"), service("svc2", clusterIPs("10.20.30.42"))},
				EndpointSlices: []*discoveryv1.EndpointSlice{
					slice("svc1", "s1", 80, ep{"192.168.2.3", "node-2", ""}), slice("svc2", "s2", 80, ep{"192.168.2.3", "node-2", ""})}},
			steps: []step{
				{lbs: []string{
					"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
					"IPv4/clusterip 10.20.30.42:80/TCP ns/svc2:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				}, remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"}},
				{do: func(c *Incremental, in *Input) {
					in.HNS.Endpoints = []hns.Endpoint{localEP("EP-B", "192.168.2.3")}
					in.Services = append(in.Services, service("svc3", clusterIPs("10.20.30.43")))
					in.EndpointSlices = []*discoveryv1.EndpointSlice{slice("svc3", "s3", 80, ep{"192.168.2.3", nodeName, ""})}
					c.SetNode(in.NodeName, in.Config, nil, nil, in.HNS)
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
			c.SetNode(in.NodeName, in.Config, nil, nil, in.HNS)
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

func TestComputeIsDeterministic(t *testing.T) {
	in := Input{NodeName: nodeName, Config: withHC(config(true)), HNS: view(true, ws2022, sourceVIPEP(), rootEP("192.168.1.1"), localEP("EP-L1", "192.168.1.5")),
		Services: []*corev1.Service{service("svc1", loadBalancer(3001, "11.21.31.41")), service("svc2", clusterIPs("10.20.30.42"), loadBalancer(3002, "11.21.31.41"))},
		EndpointSlices: []*discoveryv1.EndpointSlice{
			slice("svc1", "b", 80, ep{"192.168.2.3", "node-2", ""}), slice("svc1", "a", 80, ep{"192.168.1.5", nodeName, ""}),
			slice("svc2", "c", 80, ep{"192.168.2.4", "node-2", ""}),
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
