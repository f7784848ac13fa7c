package engine

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/testbuild"
)

// The table of load-balancer kinds (lbKinds, docs/design/dataplane.md#load-balancers):
// frontends, ports, flags, port-mapping flags and backends of each kind.

// ClusterIP and NodePort LBs, and the DSR flag dsr.enabled puts on ClusterIP LBs only.
func TestClusterIPAndNodePort(t *testing.T) {
	run(t, []scenario{
		{
			name: "scenario-15-overlay-without-dsr", cfg: config(false), view: view(true, ws2022, sourceVIPEP()),
			svcs: []*corev1.Service{service("svc1", testbuild.NodePort(3001))}, slices: []*discoveryv1.EndpointSlice{remoteSlice("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=192.168.1.2 be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=192.168.1.2 be=[192.168.2.3]",
			},
			remotes: []string{svcVIPv4, remote23},
		},
		{
			name: "scenario-16-overlay-with-dsr", cfg: config(true), view: view(true, ws2022, sourceVIPEP()),
			svcs: []*corev1.Service{service("svc1", testbuild.NodePort(3001))}, slices: []*discoveryv1.EndpointSlice{remoteSlice("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=0 svip=192.168.1.2 be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=192.168.1.2 be=[192.168.2.3]",
			},
			remotes: []string{svcVIPv4, remote23},
		},
		{
			name: "scenario-18-l2bridge-remote-endpoint", cfg: config(false), view: view(false, ws2022),
			svcs: []*corev1.Service{service("svc1", testbuild.NodePort(3001))}, slices: []*discoveryv1.EndpointSlice{remoteSlice("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
		{
			name: "scenario-27-endpoint-port-is-the-internal-port", cfg: config(false), view: view(false, ws2022),
			svcs:   []*corev1.Service{service("svc1")},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 8080, testbuild.Endpoint("192.168.2.3", "node-2"))},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=8080 flags=0 pm=0 svip=- be=[192.168.2.3]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
	})
}

// externalTrafficPolicy: Local: local backends and DSR on the external LBs, where HNS has DSR.
func TestExternalTrafficPolicyLocal(t *testing.T) {
	run(t, []scenario{
		{
			name: "scenario-03-etp-local-without-hns-dsr-uses-all-backends", cfg: config(false),
			view: view(false, noDSR, localEP("EP-L1", "192.168.1.5")),
			svcs: []*corev1.Service{service("svc1", testbuild.LoadBalancer(3001, "11.21.31.41"), testbuild.ExternalTrafficLocal())},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80,
				testbuild.Endpoint("192.168.1.5", nodeName), testbuild.Endpoint("192.168.2.3", "node-2"))},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1 192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.1.5@EP-L1 192.168.2.3]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=- be=[192.168.1.5@EP-L1 192.168.2.3]",
			},
			remotes:  []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
			problems: []string{"ns/svc1 " + v1alpha1.ReasonExternalTrafficPolicyLocalNotHonoured},
		},
		{
			name: "scenario-23-overlay-etp-local-dsr-load-balancer", cfg: withHC(config(false)),
			view:   view(true, ws2022, sourceVIPEP(), localPod(), rootEP("192.168.1.1")),
			svcs:   []*corev1.Service{lbService(testbuild.ExternalTrafficLocal())},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, testbuild.Endpoint("192.168.1.5", nodeName))},
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
			svcs:   []*corev1.Service{lbService(testbuild.ExternalTrafficLocal())},
			slices: []*discoveryv1.EndpointSlice{remoteSlice("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=192.168.1.2 be=[192.168.2.3]",
			},
			remotes: []string{svcVIPv4, remote23},
		},
		{
			name: "scenario-25-etp-cluster-no-local-traffic-dsr", cfg: config(true), view: view(true, ws2022, sourceVIPEP(), localPod()),
			svcs:   []*corev1.Service{lbService()},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, testbuild.Endpoint("192.168.1.5", nodeName))},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=0 svip=192.168.1.2 be=[192.168.1.5@EP-L1]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=192.168.1.2 be=[192.168.1.5@EP-L1]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=192.168.1.2 be=[192.168.1.5@EP-L1]",
			},
			remotes: []string{svcVIPv4},
		},
		{
			name: "scenario-25-etp-local-on-overlay-with-dsr", cfg: config(true), view: view(true, ws2022, sourceVIPEP(), localPod()),
			svcs:   []*corev1.Service{lbService(testbuild.ExternalTrafficLocal())},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, testbuild.Endpoint("192.168.1.5", nodeName))},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=0 svip=192.168.1.2 be=[192.168.1.5@EP-L1]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=1 pm=18 svip=192.168.1.2 be=[192.168.1.5@EP-L1]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=16 svip=192.168.1.2 be=[192.168.1.5@EP-L1]",
			},
			remotes: []string{svcVIPv4},
		},
		{
			name: "itp-local-etp-local-skips-remote-endpoints", cfg: config(false), view: view(false, ws2022, localPod()),
			svcs: []*corev1.Service{lbService(testbuild.InternalTrafficLocal(), testbuild.ExternalTrafficLocal())},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80,
				testbuild.Endpoint("192.168.1.5", nodeName), testbuild.Endpoint("192.168.2.3", "node-2"))},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=1 pm=18 svip=- be=[192.168.1.5@EP-L1]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=16 svip=- be=[192.168.1.5@EP-L1]",
			},
		},
	})
}

// Ingress LBs, preserve-destination, and the health-check LBs of ingress IPs.
func TestIngressAndHealthCheck(t *testing.T) {
	noHC := config(false)
	noHC.HealthCheck.ForwardVIP = false
	run(t, []scenario{
		{
			name: "scenario-39-preserve-destination", cfg: withHC(config(false)), view: view(false, ws2022, localPod(), rootEP("192.168.1.1")),
			svcs: []*corev1.Service{lbService(testbuild.ServiceAnnotation(AnnotationPreserveDestination, "true"))},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80,
				testbuild.Endpoint("192.168.1.5", nodeName), testbuild.Endpoint("192.168.2.3", "node-2"))},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1 192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.1.5@EP-L1]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=28 svip=- be=[192.168.1.5@EP-L1]",
				"IPv4/healthcheck 11.21.31.41:10256/TCP int=10256 flags=0 pm=12 svip=- be=[192.168.1.1@EP-GW]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
		{
			name: "scenario-46-proxy-mode-and-other-family-ingress-ignored", cfg: withHC(config(false)), view: view(false, ws2022, rootEP("192.168.1.1")),
			svcs: []*corev1.Service{lbService(func(s *corev1.Service) {
				proxy := corev1.LoadBalancerIPModeProxy
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "11.21.31.41", IPMode: &proxy}, {IP: "fd00::1"}}
			})},
			slices: []*discoveryv1.EndpointSlice{remoteSlice("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
		{
			name: "scenario-48-health-check-node-port", cfg: withHC(config(false)), view: view(false, ws2022, localPod(), rootEP("192.168.1.1")),
			svcs:   []*corev1.Service{lbService(testbuild.ExternalTrafficLocal(), func(s *corev1.Service) { s.Spec.HealthCheckNodePort = 32000 })},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, testbuild.Endpoint("192.168.1.5", nodeName))},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=1 pm=18 svip=- be=[192.168.1.5@EP-L1]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=16 svip=- be=[192.168.1.5@EP-L1]",
				"IPv4/healthcheck 11.21.31.41:32000/TCP int=32000 flags=0 pm=0 svip=- be=[192.168.1.1@EP-GW]",
			},
		},
		{
			name: "scenario-48-root-endpoint-missing", cfg: withHC(config(false)), view: view(false, ws2022),
			svcs: []*corev1.Service{lbService()}, slices: []*discoveryv1.EndpointSlice{remoteSlice("svc1")},
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
			svcs: []*corev1.Service{lbService()}, slices: []*discoveryv1.EndpointSlice{remoteSlice("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=- be=[192.168.2.3]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
	})
}

// Each family gets its own LBs; IPv6 ones carry the IPv6 flag.
func TestDualStackLoadBalancers(t *testing.T) {
	dsLocal := localEP("EP-L", "192.168.1.5", "fd01::5")
	dsRoot := rootEP("192.168.1.1", "fd01::1")
	run(t, []scenario{
		{
			name: "scenario-28-dual-stack-etp-local-dsr", cfg: dualStackConfig(true), view: view(false, ws2022, dsLocal, dsRoot),
			svcs: []*corev1.Service{dualStackService(testbuild.ExternalTrafficLocal())},
			slices: []*discoveryv1.EndpointSlice{
				sliceFam("svc1", "s4", discoveryv1.AddressTypeIPv4, 80, testbuild.Endpoint("192.168.1.5", nodeName)),
				sliceFam("svc1", "s6", discoveryv1.AddressTypeIPv6, 80, testbuild.Endpoint("fd01::5", nodeName)),
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
				sliceFam("svc1", "s4", discoveryv1.AddressTypeIPv4, 80, testbuild.Endpoint("192.168.1.5", nodeName), testbuild.Endpoint("192.168.2.3", "node-2")),
				sliceFam("svc1", "s6", discoveryv1.AddressTypeIPv6, 80, testbuild.Endpoint("fd01::5", nodeName), testbuild.Endpoint("fd02::3", "node-2")),
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
	})
}

// Which services are proxied, session affinity and winProxyOptimization.
func TestServiceSettings(t *testing.T) {
	run(t, []scenario{
		{
			name: "scenario-45-client-ip-affinity", cfg: withHC(config(false)), view: view(false, ws2022, rootEP("192.168.1.1")),
			svcs:   []*corev1.Service{lbService(testbuild.ClientIPAffinity(), testbuild.ExternalIPs("50.0.0.1"))},
			slices: []*discoveryv1.EndpointSlice{remoteSlice("svc1")},
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
			svcs:   []*corev1.Service{service("svc1", testbuild.ClientIPAffinity())},
			slices: []*discoveryv1.EndpointSlice{remoteSlice("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
			},
			remotes:  []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
			problems: []string{"ns/svc1 " + v1alpha1.ReasonSessionAffinityUnsupported},
		},
		{
			name: "scenario-50-headless-and-external-name-ignored", cfg: config(false), view: view(true, ws2022, sourceVIPEP()),
			svcs: []*corev1.Service{
				service("headless", testbuild.ClusterIPs(corev1.ClusterIPNone)),
				service("ext", func(s *corev1.Service) {
					s.Spec.Type, s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "", nil, "example.com"
				}),
			},
			slices: []*discoveryv1.EndpointSlice{remoteSlice("headless"), remoteSlice("ext")},
		},
		{
			name: "scenario-52-optimization-disabled-recreates", cfg: config(false), view: view(false, ws2022),
			svcs:   []*corev1.Service{service("svc1", testbuild.ServiceAnnotation(AnnotationWinProxyOptimization, "Disabled"))},
			slices: []*discoveryv1.EndpointSlice{remoteSlice("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3] recreate",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
	})
}

// HNS refuses two LBs on one frontend: the smallest key wins, and services
// sharing an ingress IP share its health-check LB.
func TestFrontendConflicts(t *testing.T) {
	run(t, []scenario{
		{
			name: "frontend-conflict-smallest-key-wins", cfg: config(false), view: view(false, ws2022),
			svcs: []*corev1.Service{
				service("svc1", testbuild.ExternalIPs("50.0.0.1")),
				service("svc2", testbuild.ClusterIPs("10.20.30.42"), testbuild.ExternalIPs("50.0.0.1")),
			},
			slices: []*discoveryv1.EndpointSlice{remoteSlice("svc1"), remoteSlice("svc2")},
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
			svcs: []*corev1.Service{lbService(), service("svc2", testbuild.ClusterIPs("10.20.30.42"), testbuild.LoadBalancer(3002, "11.21.31.41"),
				func(s *corev1.Service) { s.Spec.Ports[0].Port = 81 })},
			slices: []*discoveryv1.EndpointSlice{remoteSlice("svc1"), remoteSlice("svc2")},
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
	})
}
