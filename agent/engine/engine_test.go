package engine

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// Scenarios of reference §10 that are not engine cases:
//   - 1, 4, 9, 10, 11: feature-gate and mode checks at start-up; the
//     controller resolves gates per node version and the CRD rejects bad
//     modes, so a ResolvedProxyConfig never carries them (controllers/).
//   - 7: an empty network name is rejected by the CRD (MinLength=1).
//   - 13, 20, 21, 22, 32, 33, 34, 35, 43, 44, 47, 49: HNS call behaviour
//     (adoption instead of a purge, modify vs delete+create, failures,
//     foreign LBs, network recreation, HNS down, retries); agent/apply.
//   - 19, 31 are engine cases below and apply cases (ref-counting).
//   - 42, 52 are engine cases below (what to create / the Recreate flag)
//     and apply cases (the calls made).
type scenario struct {
	name     string
	cfg      v1alpha1.ResolvedProxyConfig
	view     HNSView
	svcs     []*corev1.Service
	slices   []*discoveryv1.EndpointSlice
	lbs      []string
	remotes  []string
	problems []string
	check    func(t *testing.T, d *Desired)
}

func run(t *testing.T, cases []scenario) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Compute(Input{NodeName: nodeName, Config: tc.cfg, Services: tc.svcs, EndpointSlices: tc.slices, HNS: tc.view})
			if diff := cmp.Diff(tc.lbs, lbs(d)); diff != "" {
				t.Errorf("load balancers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.remotes, remotes(d)); diff != "" {
				t.Errorf("remote endpoints (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.problems, reasons(d)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(t, d)
			}
		})
	}
}

func withHC(c v1alpha1.ResolvedProxyConfig) v1alpha1.ResolvedProxyConfig {
	c.HealthCheck = v1alpha1.HealthCheckSpec{ForwardVIP: true, RootEndpointName: "cbr0"}
	return c
}

func rootEP(ips ...string) hns.Endpoint {
	e := localEP("EP-GW", ips...)
	e.Name = "cbr0"
	return e
}

func blocked(reason string) func(t *testing.T, d *Desired) {
	return func(t *testing.T, d *Desired) {
		t.Helper()
		if d.Effective.Programmable || d.Effective.Blocked.Reason != reason {
			t.Errorf("Programmable=%v Blocked=%+v, want blocked by %s", d.Effective.Programmable, d.Effective.Blocked, reason)
		}
	}
}

const (
	svcVIPv4 = "10.20.30.41 mac=" + hostMAC + " pa=10.0.0.1 svcvip"
	remote23 = "192.168.2.3 mac=02-11-c0-a8-02-03 pa=10.0.0.3"
)

func TestStartupScenarios(t *testing.T) {
	overlayNP := []*corev1.Service{service("svc1", nodePort(3001))}
	remoteSlice := []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, ep{"192.168.2.3", "node-2", ""})}
	noSVIP := config(false)
	noSVIP.SourceVIP = nil
	noMAC := view(true, ws2022, sourceVIPEP())
	noMAC.HostMAC = ""
	v6SVIP := config(false)
	v6SVIP.SourceVIP.Address = "fd00::2"
	run(t, []scenario{
		{
			name: "scenario-02-dsr-requested-hns-without-dsr", cfg: config(true), view: view(false, noDSR),
			svcs: overlayNP, slices: remoteSlice,
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
			check: func(t *testing.T, d *Desired) {
				if d.Effective.DSR.Active || !d.Effective.DSR.Requested || d.Effective.DSRActive.Reason != v1alpha1.ReasonDSRUnsupported {
					t.Errorf("DSR = %+v %+v, want requested, inactive, DSRUnsupported", d.Effective.DSR, d.Effective.DSRActive)
				}
			},
		},
		{
			name: "scenario-03-etp-local-without-hns-dsr-uses-all-backends", cfg: config(false),
			view: view(false, noDSR, localEP("EP-L1", "192.168.1.5")),
			svcs: []*corev1.Service{service("svc1", loadBalancer(3001, "11.21.31.41"), etpLocal)},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80,
				ep{"192.168.1.5", nodeName, ""}, ep{"192.168.2.3", "node-2", ""})},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1 192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.1.5@EP-L1 192.168.2.3]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=- be=[192.168.1.5@EP-L1 192.168.2.3]",
			},
			remotes:  []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
			problems: []string{"ns/svc1 " + v1alpha1.ReasonExternalTrafficPolicyLocalNotHonoured},
		},
		{
			name: "scenario-05-overlay-without-source-vip", cfg: noSVIP, view: view(true, ws2022),
			svcs: overlayNP, slices: remoteSlice, check: blocked(v1alpha1.ReasonSourceVIPUnavailable),
		},
		{
			name: "scenario-06-overlay-without-host-mac", cfg: config(false), view: noMAC,
			svcs: overlayNP, slices: remoteSlice, problems: []string{v1alpha1.ReasonHostMACUnknown},
			check: blocked(v1alpha1.ReasonHostMACUnknown),
		},
		{
			name: "scenario-08-network-absent", cfg: config(false), view: HNSView{Capabilities: ws2022},
			svcs: overlayNP, slices: remoteSlice,
			check: func(t *testing.T, d *Desired) {
				blocked(v1alpha1.ReasonNetworkNotFound)(t, d)
				if d.Effective.NetworkReady.OK {
					t.Error("NetworkReady is true")
				}
			},
		},
		{
			name: "scenario-14-source-vip-of-the-wrong-family", cfg: v6SVIP, view: view(true, ws2022),
			svcs: overlayNP, slices: remoteSlice, check: blocked(v1alpha1.ReasonSourceVIPUnavailable),
		},
	})
}

func TestScenario12DualStack(t *testing.T) {
	cfg := config(false)
	cfg.DualStack = true
	for _, tc := range []struct {
		name     string
		overlay  bool
		caps     hns.Capabilities
		families []v1alpha1.IPFamily
		reason   string
		down     bool
	}{
		{"scenario-12-l2bridge-hns-11.10", false, ws2022, []v1alpha1.IPFamily{v1alpha1.IPv4, v1alpha1.IPv6}, v1alpha1.ReasonDualStackActive, false},
		{"scenario-12-overlay-downgrades", true, ws2022, []v1alpha1.IPFamily{v1alpha1.IPv4}, v1alpha1.ReasonOverlayNetwork, true},
		{"scenario-12-old-hns-downgrades", false, ws2019, []v1alpha1.IPFamily{v1alpha1.IPv4}, v1alpha1.ReasonHNSUnsupported, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Compute(Input{NodeName: nodeName, Config: cfg, HNS: view(tc.overlay, tc.caps, sourceVIPEP())})
			e := d.Effective
			if diff := cmp.Diff(tc.families, e.IPFamilies); diff != "" {
				t.Errorf("families (-want +got):\n%s", diff)
			}
			if e.DualStackDowngraded.OK != tc.down || e.DualStackDowngraded.Reason != tc.reason {
				t.Errorf("downgraded = %+v, want %v %s", e.DualStackDowngraded, tc.down, tc.reason)
			}
		})
	}
}

func TestProgrammingScenarios(t *testing.T) {
	remote := func(svc string) *discoveryv1.EndpointSlice {
		return slice(svc, svc+"-a", 80, ep{"192.168.2.3", "node-2", ""})
	}
	np := service("svc1", nodePort(3001))
	lbSvc := func(opts ...svcOpt) *corev1.Service {
		return service("svc1", append([]svcOpt{loadBalancer(3001, "11.21.31.41")}, opts...)...)
	}
	local5 := localEP("EP-L1", "192.168.1.5")
	run(t, []scenario{
		{
			name: "scenario-15-overlay-without-dsr", cfg: config(false), view: view(true, ws2022, sourceVIPEP()),
			svcs: []*corev1.Service{np}, slices: []*discoveryv1.EndpointSlice{remote("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=192.168.1.2 be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=192.168.1.2 be=[192.168.2.3]",
			},
			remotes: []string{svcVIPv4, remote23},
		},
		{
			name: "scenario-16-overlay-with-dsr", cfg: config(true), view: view(true, ws2022, sourceVIPEP()),
			svcs: []*corev1.Service{np}, slices: []*discoveryv1.EndpointSlice{remote("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=0 svip=192.168.1.2 be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=192.168.1.2 be=[192.168.2.3]",
			},
			remotes: []string{svcVIPv4, remote23},
		},
		{
			name: "scenario-17-overlay-service-vip-endpoint-without-backends", cfg: config(false), view: view(true, ws2022, sourceVIPEP()),
			svcs:    []*corev1.Service{service("svc1", nodePort(3001), externalIPs("50.0.0.1"), clientIP)},
			remotes: []string{svcVIPv4},
		},
		{
			name: "scenario-18-l2bridge-remote-endpoint", cfg: config(false), view: view(false, ws2022),
			svcs: []*corev1.Service{np}, slices: []*discoveryv1.EndpointSlice{remote("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
		{
			name: "scenario-19-shared-remote-endpoint-is-one-object", cfg: config(false), view: view(false, ws2022),
			svcs:   []*corev1.Service{np, service("svc2", clusterIPs("10.20.30.42"), nodePort(3002))},
			slices: []*discoveryv1.EndpointSlice{remote("svc1"), remote("svc2")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/clusterip 10.20.30.42:80/TCP ns/svc2:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3002/TCP ns/svc2:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
		{
			name: "scenario-23-overlay-etp-local-dsr-load-balancer", cfg: withHC(config(false)),
			view:   view(true, ws2022, sourceVIPEP(), local5, rootEP("192.168.1.1")),
			svcs:   []*corev1.Service{lbSvc(etpLocal)},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, ep{"192.168.1.5", nodeName, ""})},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=192.168.1.2 be=[192.168.1.5@EP-L1]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=1 pm=18 svip=192.168.1.2 be=[192.168.1.5@EP-L1]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=16 svip=192.168.1.2 be=[192.168.1.5@EP-L1]",
				"IPv4/healthcheck 11.21.31.41:10256/TCP int=10256 flags=0 pm=0 svip=192.168.1.2 be=[192.168.1.1@EP-GW]",
			},
			remotes: []string{svcVIPv4},
		},
		{
			name: "scenario-24-etp-local-only-remote-backend", cfg: withHC(config(false)),
			view:   view(true, ws2022, sourceVIPEP(), rootEP("192.168.1.1")),
			svcs:   []*corev1.Service{lbSvc(etpLocal)},
			slices: []*discoveryv1.EndpointSlice{remote("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=192.168.1.2 be=[192.168.2.3]",
			},
			remotes: []string{svcVIPv4, remote23},
		},
		{
			name: "scenario-25-etp-cluster-no-local-traffic-dsr", cfg: config(true), view: view(true, ws2022, sourceVIPEP(), local5),
			svcs:   []*corev1.Service{lbSvc()},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, ep{"192.168.1.5", nodeName, ""})},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=0 svip=192.168.1.2 be=[192.168.1.5@EP-L1]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=192.168.1.2 be=[192.168.1.5@EP-L1]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=192.168.1.2 be=[192.168.1.5@EP-L1]",
			},
			remotes: []string{svcVIPv4},
		},
		{
			name: "scenario-25-etp-local-on-overlay-with-dsr", cfg: config(true), view: view(true, ws2022, sourceVIPEP(), local5),
			svcs:   []*corev1.Service{lbSvc(etpLocal)},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, ep{"192.168.1.5", nodeName, ""})},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=0 svip=192.168.1.2 be=[192.168.1.5@EP-L1]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=1 pm=18 svip=192.168.1.2 be=[192.168.1.5@EP-L1]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=16 svip=192.168.1.2 be=[192.168.1.5@EP-L1]",
			},
			remotes: []string{svcVIPv4},
		},
		{
			name: "scenario-27-endpoint-port-is-the-internal-port", cfg: config(false), view: view(false, ws2022),
			svcs:   []*corev1.Service{service("svc1")},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 8080, ep{"192.168.2.3", "node-2", ""})},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=8080 flags=0 pm=0 svip=- be=[192.168.2.3]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
		{
			name: "scenario-30-same-ip-local-and-remote-uses-the-local-endpoint", cfg: config(false), view: view(false, ws2022, local5),
			svcs: []*corev1.Service{service("svc1"), service("svc2", clusterIPs("10.20.30.42"))},
			slices: []*discoveryv1.EndpointSlice{
				slice("svc1", "s1", 80, ep{"192.168.1.5", nodeName, ""}),
				slice("svc2", "s2", 80, ep{"192.168.1.5", "node-2", ""}),
			},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1]",
				"IPv4/clusterip 10.20.30.42:80/TCP ns/svc2:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1]",
			},
		},
		{
			name: "scenario-36-duplicate-ip-local-endpoint-wins", cfg: config(false),
			view:   view(false, ws2022, hns.Endpoint{ID: "EP-R", Remote: true, IPs: []netip.Addr{ip("192.168.1.5")}}, local5),
			svcs:   []*corev1.Service{service("svc1")},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, ep{"192.168.1.5", "node-2", ""})},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1]",
			},
		},
		{
			name: "scenario-38-clusterip-only-terminating-endpoint-gets-no-lb", cfg: config(false), view: view(false, ws2022),
			svcs:   []*corev1.Service{service("svc1")},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, ep{"192.168.2.3", "node-2", "-r+s+t"})},
		},
		{
			name: "scenario-40-overlay-remote-node-ip-backend-uses-node-ip", cfg: config(false), view: view(true, ws2022, sourceVIPEP()),
			svcs:   []*corev1.Service{service("svc1")},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, ep{"10.0.0.3", "node-3", ""})},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=10.0.0.1 be=[10.0.0.3]",
			},
			remotes: []string{"10.0.0.3 mac=02-11-0a-00-00-03 pa=10.0.0.3", svcVIPv4},
		},
		{
			name: "scenario-40-overlay-public-backend-uses-node-ip", cfg: config(false), view: view(true, ws2022, sourceVIPEP()),
			svcs:   []*corev1.Service{service("svc1")},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, ep{"8.8.8.8", "", ""})},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=10.0.0.1 be=[8.8.8.8]",
			},
			remotes: []string{"8.8.8.8 mac=02-11-08-08-08-08 pa=10.0.0.1", svcVIPv4},
		},
		{
			name: "scenario-40-overlay-pod-backend-uses-source-vip", cfg: config(false), view: view(true, ws2022, sourceVIPEP()),
			svcs:   []*corev1.Service{service("svc1")},
			slices: []*discoveryv1.EndpointSlice{remote("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=192.168.1.2 be=[192.168.2.3]",
			},
			remotes: []string{svcVIPv4, remote23},
		},
		{
			name: "scenario-41-l2bridge-ignores-configured-source-vip", cfg: config(false), view: view(false, ws2022),
			svcs:   []*corev1.Service{service("svc1")},
			slices: []*discoveryv1.EndpointSlice{remote("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
			check: func(t *testing.T, d *Desired) {
				if d.Effective.SourceVIP.Address != "" || d.Effective.SourceVIPOK.Reason != v1alpha1.ReasonNotRequired {
					t.Errorf("source VIP %+v %+v, want none, NotRequired", d.Effective.SourceVIP, d.Effective.SourceVIPOK)
				}
			},
		},
		{
			name: "scenario-42-missing-source-vip-endpoint-is-to-be-created", cfg: config(false), view: view(true, ws2022),
			svcs:   []*corev1.Service{service("svc1")},
			slices: []*discoveryv1.EndpointSlice{remote("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=192.168.1.2 be=[192.168.2.3]",
			},
			remotes: []string{svcVIPv4, remote23},
			check: func(t *testing.T, d *Desired) {
				want := &SourceVIPEndpoint{IP: ip(sourceVIP), MAC: hostMAC}
				if diff := cmp.Diff(want, d.SourceVIPEndpoint, cmpAddr); diff != "" {
					t.Errorf("source-VIP endpoint (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "scenario-45-client-ip-affinity", cfg: withHC(config(false)), view: view(false, ws2022, rootEP("192.168.1.1")),
			svcs:   []*corev1.Service{lbSvc(clientIP, externalIPs("50.0.0.1"))},
			slices: []*discoveryv1.EndpointSlice{remote("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3] dist=2",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3] dist=2",
				"IPv4/externalip 50.0.0.1:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=- be=[192.168.2.3] dist=2",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=- be=[192.168.2.3] dist=2",
				"IPv4/healthcheck 11.21.31.41:10256/TCP int=10256 flags=0 pm=0 svip=- be=[192.168.1.1@EP-GW]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
		{
			// Deliberate deviation: winkernel sends the distribution anyway;
			// HNS before 12.0 does not know it, so it is left out and reported.
			name: "scenario-45-client-ip-affinity-on-hns-without-it", cfg: config(false), view: view(false, ws2019),
			svcs:   []*corev1.Service{service("svc1", clientIP)},
			slices: []*discoveryv1.EndpointSlice{remote("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
			},
			remotes:  []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
			problems: []string{"ns/svc1 " + v1alpha1.ReasonSessionAffinityUnsupported},
		},
		{
			name: "scenario-46-proxy-mode-and-other-family-ingress-ignored", cfg: withHC(config(false)), view: view(false, ws2022, rootEP("192.168.1.1")),
			svcs: []*corev1.Service{lbSvc(func(s *corev1.Service) {
				proxy := corev1.LoadBalancerIPModeProxy
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "11.21.31.41", IPMode: &proxy}, {IP: "fd00::1"}}
			})},
			slices: []*discoveryv1.EndpointSlice{remote("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
		{
			name: "scenario-50-headless-and-external-name-ignored", cfg: config(false), view: view(true, ws2022, sourceVIPEP()),
			svcs: []*corev1.Service{
				service("headless", clusterIPs(corev1.ClusterIPNone)),
				service("ext", func(s *corev1.Service) {
					s.Spec.Type, s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "", nil, "example.com"
				}),
			},
			slices: []*discoveryv1.EndpointSlice{remote("headless"), remote("ext")},
		},
		{
			name: "scenario-52-optimization-disabled-recreates", cfg: config(false), view: view(false, ws2022),
			svcs:   []*corev1.Service{service("svc1", annotate(AnnotationWinProxyOptimization, "Disabled"))},
			slices: []*discoveryv1.EndpointSlice{remote("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3] recreate",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
	})
}
