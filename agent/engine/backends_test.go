package engine

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/testbuild"
)

// The endpoint pipeline (selectBackends, docs/design/dataplane.md#endpoint-selection):
// which endpoints become backends, local or remote, and the internal port.

// Terminating endpoints count only for services with an ingress IP.
func TestTerminatingEndpoints(t *testing.T) {
	terminatingSvc := func(opts ...testbuild.ServiceOption) *corev1.Service {
		return service("svc1", append([]testbuild.ServiceOption{testbuild.LoadBalancer(3001, "20.0.0.10"), testbuild.ExternalIPs("50.0.0.1")}, opts...)...)
	}
	terminatingSlices := []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80,
		testbuild.Endpoint("192.168.1.10", nodeName, testbuild.Conditions("-r+s+t")), testbuild.Endpoint("192.168.1.11", nodeName, testbuild.Conditions("-r-s+t")), testbuild.Endpoint("192.168.2.3", "node-2"))}
	terminatingView := view(false, ws2022, localEP("EP-A", "192.168.1.10"), localEP("EP-B", "192.168.1.11"), rootEP("192.168.1.1"))
	run(t, []scenario{
		{
			name: "scenario-37-terminating-example-etp-local", cfg: withHC(config(false)), view: terminatingView,
			svcs: []*corev1.Service{terminatingSvc(testbuild.ExternalTrafficLocal())}, slices: terminatingSlices,
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
			name: "scenario-38-clusterip-only-terminating-endpoint-gets-no-lb", cfg: config(false), view: view(false, ws2022),
			svcs:   []*corev1.Service{service("svc1")},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, testbuild.Endpoint("192.168.2.3", "node-2", testbuild.Conditions("-r+s+t")))},
		},
		{
			name: "scenario-51-all-terminating-etp-cluster", cfg: withHC(config(false)), view: view(false, ws2022, rootEP("192.168.1.1")),
			svcs: []*corev1.Service{lbService(testbuild.ExternalIPs("50.0.0.1"))},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80,
				testbuild.Endpoint("192.168.2.3", "node-2", testbuild.Conditions("-r+s+t")), testbuild.Endpoint("192.168.2.4", "node-2", testbuild.Conditions("-r+s+t")))},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3 192.168.2.4]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=- be=[192.168.2.3 192.168.2.4]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03", "192.168.2.4 mac=02-11-c0-a8-02-04"},
		},
	})
}

// A backend is local when a local HNS endpoint holds its IP, whatever
// Kubernetes says; a local endpoint without one is left out and reported.
func TestLocalHNSEndpoints(t *testing.T) {
	run(t, []scenario{
		{
			name: "scenario-30-same-ip-local-and-remote-uses-the-local-endpoint", cfg: config(false), view: view(false, ws2022, localPod()),
			svcs: []*corev1.Service{service("svc1"), service("svc2", testbuild.ClusterIPs("10.20.30.42"))},
			slices: []*discoveryv1.EndpointSlice{
				slice("svc1", "s1", 80, testbuild.Endpoint("192.168.1.5", nodeName)),
				slice("svc2", "s2", 80, testbuild.Endpoint("192.168.1.5", "node-2")),
			},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1]",
				"IPv4/clusterip 10.20.30.42:80/TCP ns/svc2:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1]",
			},
		},
		{
			name: "scenario-36-duplicate-ip-local-endpoint-wins", cfg: config(false),
			view:   view(false, ws2022, hns.Endpoint{ID: "EP-R", Remote: true, IPs: []netip.Addr{ip("192.168.1.5")}}, localPod()),
			svcs:   []*corev1.Service{service("svc1")},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, testbuild.Endpoint("192.168.1.5", "node-2"))},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1]",
			},
		},
		{
			name: "local-endpoint-without-hns-endpoint-is-reported", cfg: config(false), view: view(false, ws2022),
			svcs:     []*corev1.Service{service("svc1")},
			slices:   []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, testbuild.Endpoint("192.168.1.5", nodeName))},
			problems: []string{"ns/svc1 " + v1alpha1.ReasonLocalEndpointNotFound},
		},
	})
}

// Endpoint rules the conformance suite (test/conformance) found winproxy
// following differently from upstream: kube-proxy's endpoint-slice cache
// (pkg/proxy/endpointslicecache.go) on duplicate addresses, and winkernel's
// choice of the internal port.
func TestDuplicateEndpointsAsUpstream(t *testing.T) {
	lbSvc := service("svc1", testbuild.LoadBalancer(3001, "11.21.31.41"))
	noHC := config(false)
	run(t, []scenario{
		{
			// The cache keys endpoints by IP:port; a later entry replaces an
			// earlier one unless the later one is terminating. Here the
			// later entry (an IP reused by a pod that is not ready yet)
			// wins, so the address is not a backend.
			name: "duplicate-ip-later-non-terminating-entry-wins", cfg: noHC, view: view(false, ws2022),
			svcs: []*corev1.Service{service("svc1")},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80,
				testbuild.Endpoint("192.168.2.3", "node-2", testbuild.Conditions("+r+s-t")), testbuild.Endpoint("192.168.2.3", "node-2", testbuild.Conditions("-r-s-t")), testbuild.Endpoint("192.168.2.4", "node-2"))},
			lbs:     []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.4]"},
			remotes: []string{"192.168.2.4 mac=02-11-c0-a8-02-04"},
		},
		{
			// Both entries terminating: the later one does not replace the
			// first. The first still serves, so with every endpoint
			// terminating it is used.
			name: "duplicate-ip-both-terminating-first-entry-stays", cfg: noHC, view: view(false, ws2022),
			svcs: []*corev1.Service{lbSvc},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80,
				testbuild.Endpoint("192.168.2.3", "node-2", testbuild.Conditions("-r+s+t")), testbuild.Endpoint("192.168.2.3", "node-2", testbuild.Conditions("-r-s+t")), testbuild.Endpoint("192.168.2.4", "node-2", testbuild.Conditions("-r+s+t")))},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3 192.168.2.4]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=- be=[192.168.2.3 192.168.2.4]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03", "192.168.2.4 mac=02-11-c0-a8-02-04"},
		},
		{
			// A terminating later entry does not replace a running one.
			name: "duplicate-ip-later-terminating-entry-is-ignored", cfg: noHC, view: view(false, ws2022),
			svcs: []*corev1.Service{service("svc1")},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80,
				testbuild.Endpoint("192.168.2.3", "node-2", testbuild.Conditions("+r+s-t")), testbuild.Endpoint("192.168.2.3", "node-2", testbuild.Conditions("-r-s+t")))},
			lbs:     []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]"},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
	})
}

// HNS load balancers have one internal port; with backends on several
// ports (a named target port resolving to different numbers) winkernel
// takes the port of the last endpoint, endpoints ordered as "ip:port"
// strings, before skipping a local endpoint that has no HNS endpoint.
func TestTargetPortAsUpstream(t *testing.T) {
	noHC := config(false)
	namedTarget := func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("http") }
	run(t, []scenario{
		{
			// One IP on two ports (reused across a rollout) is two
			// endpoints for the cache, but one backend.
			name: "same-ip-on-two-ports-is-one-backend", cfg: noHC, view: view(false, ws2022),
			svcs: []*corev1.Service{service("svc1", namedTarget)},
			slices: []*discoveryv1.EndpointSlice{
				slice("svc1", "s1", 8080, testbuild.Endpoint("192.168.2.3", "node-2", testbuild.Conditions("-r-s+t")), testbuild.Endpoint("192.168.2.2", "node-2")),
				slice("svc1", "s2", 9090, testbuild.Endpoint("192.168.2.3", "node-2")),
			},
			lbs:      []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=9090 flags=0 pm=0 svip=- be=[192.168.2.2 192.168.2.3]"},
			remotes:  []string{"192.168.2.2 mac=02-11-c0-a8-02-02", "192.168.2.3 mac=02-11-c0-a8-02-03"},
			problems: []string{"ns/svc1 MixedTargetPorts"},
		},
		{
			// HNS LBs have one internal port: winkernel takes the last
			// endpoint's, endpoints ordered as "ip:port" strings, so
			// "192.168.2.10:8080" comes before "192.168.2.9:9090".
			name: "mixed-target-ports-last-endpoint-in-string-order", cfg: noHC, view: view(false, ws2022),
			svcs: []*corev1.Service{service("svc1", namedTarget)},
			slices: []*discoveryv1.EndpointSlice{
				slice("svc1", "s1", 8080, testbuild.Endpoint("192.168.2.10", "node-2")),
				slice("svc1", "s2", 9090, testbuild.Endpoint("192.168.2.9", "node-2")),
			},
			lbs:      []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=9090 flags=0 pm=0 svip=- be=[192.168.2.9 192.168.2.10]"},
			remotes:  []string{"192.168.2.9 mac=02-11-c0-a8-02-09", "192.168.2.10 mac=02-11-c0-a8-02-0a"},
			problems: []string{"ns/svc1 MixedTargetPorts"},
		},
		{
			// The port is taken before a local endpoint without an HNS
			// endpoint is skipped: the LB listens on the skipped
			// endpoint's port.
			name: "mixed-target-ports-taken-before-skipping-a-missing-local-endpoint", cfg: noHC,
			view: view(false, ws2022, localEP("EP-10", "192.168.1.10")),
			svcs: []*corev1.Service{service("svc1", namedTarget)},
			slices: []*discoveryv1.EndpointSlice{
				slice("svc1", "s1", 8080, testbuild.Endpoint("192.168.1.10", nodeName)),
				slice("svc1", "s2", 9090, testbuild.Endpoint("192.168.1.9", nodeName)),
			},
			lbs:      []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=9090 flags=0 pm=0 svip=- be=[192.168.1.10@EP-10]"},
			problems: []string{"ns/svc1 LocalEndpointNotFound", "ns/svc1 MixedTargetPorts"},
		},
		{
			// kube-proxy ignores a slice port that is 0 (endpointslicecache.go):
			// nothing listens there, so its endpoints are no backends.
			name: "slice-port-0-serves-nothing", cfg: noHC, view: view(false, ws2022),
			svcs: []*corev1.Service{service("svc1", namedTarget)},
			slices: []*discoveryv1.EndpointSlice{
				slice("svc1", "s1", 0, testbuild.Endpoint("192.168.2.3", "node-2")),
				slice("svc1", "s2", 8080, testbuild.Endpoint("192.168.2.2", "node-2")),
			},
			lbs:     []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=8080 flags=0 pm=0 svip=- be=[192.168.2.2]"},
			remotes: []string{"192.168.2.2 mac=02-11-c0-a8-02-02"},
		},
	})
}
