package engine

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Endpoint rules the conformance suite (test/conformance) found winproxy
// following differently from upstream: kube-proxy's endpoint-slice cache
// (pkg/proxy/endpointslicecache.go) on duplicate addresses, and winkernel's
// choice of the internal port.
func TestDuplicateEndpointsAsUpstream(t *testing.T) {
	lbSvc := service("svc1", loadBalancer(3001, "11.21.31.41"))
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
				ep{"192.168.2.3", "node-2", "+r+s-t"}, ep{"192.168.2.3", "node-2", "-r-s-t"}, ep{"192.168.2.4", "node-2", ""})},
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
				ep{"192.168.2.3", "node-2", "-r+s+t"}, ep{"192.168.2.3", "node-2", "-r-s+t"}, ep{"192.168.2.4", "node-2", "-r+s+t"})},
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
				ep{"192.168.2.3", "node-2", "+r+s-t"}, ep{"192.168.2.3", "node-2", "-r-s+t"})},
			lbs:     []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]"},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
	})
}
