package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/testbuild"
)

// Remote endpoints and the overlay source VIP of LBs
// (docs/design/dataplane.md#remote-endpoints, #source-vip).

// One remote endpoint per remote backend address, shared by the services
// using it; on overlay one per ClusterIP as well.
func TestRemoteEndpoints(t *testing.T) {
	run(t, []scenario{
		{
			name: "scenario-17-overlay-service-vip-endpoint-without-backends", cfg: config(false), view: view(true, ws2022, sourceVIPEP()),
			svcs:    []*corev1.Service{service("svc1", testbuild.NodePort(3001), testbuild.ExternalIPs("50.0.0.1"), testbuild.ClientIPAffinity())},
			remotes: []string{svcVIPv4},
		},
		{
			name: "scenario-19-shared-remote-endpoint-is-one-object", cfg: config(false), view: view(false, ws2022),
			svcs:   []*corev1.Service{service("svc1", testbuild.NodePort(3001)), service("svc2", testbuild.ClusterIPs("10.20.30.42"), testbuild.NodePort(3002))},
			slices: []*discoveryv1.EndpointSlice{remoteSlice("svc1"), remoteSlice("svc2")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/clusterip 10.20.30.42:80/TCP ns/svc2:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3002/TCP ns/svc2:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
		},
	})
}

// The source VIP of overlay LBs follows their remote backends; L2Bridge LBs have none.
func TestLoadBalancerSourceVIP(t *testing.T) {
	run(t, []scenario{
		{
			name: "scenario-40-overlay-remote-node-ip-backend-uses-node-ip", cfg: config(false), view: view(true, ws2022, sourceVIPEP()),
			svcs:   []*corev1.Service{service("svc1")},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, testbuild.Endpoint("10.0.0.3", "node-3"))},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=10.0.0.1 be=[10.0.0.3]",
			},
			remotes: []string{"10.0.0.3 mac=02-11-0a-00-00-03 pa=10.0.0.3", svcVIPv4},
		},
		{
			name: "scenario-40-overlay-public-backend-uses-node-ip", cfg: config(false), view: view(true, ws2022, sourceVIPEP()),
			svcs:   []*corev1.Service{service("svc1")},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, testbuild.Endpoint("8.8.8.8", ""))},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=10.0.0.1 be=[8.8.8.8]",
			},
			remotes: []string{"8.8.8.8 mac=02-11-08-08-08-08 pa=10.0.0.1", svcVIPv4},
		},
		{
			name: "scenario-40-overlay-pod-backend-uses-source-vip", cfg: config(false), view: view(true, ws2022, sourceVIPEP()),
			svcs:   []*corev1.Service{service("svc1")},
			slices: []*discoveryv1.EndpointSlice{remoteSlice("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=192.168.1.2 be=[192.168.2.3]",
			},
			remotes: []string{svcVIPv4, remote23},
		},
		{
			name: "scenario-41-l2bridge-ignores-configured-source-vip", cfg: config(false), view: view(false, ws2022),
			svcs:   []*corev1.Service{service("svc1")},
			slices: []*discoveryv1.EndpointSlice{remoteSlice("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
			check: func(t *testing.T, d *Desired) {
				if d.Effective.SourceVIP.Address != "" || d.Effective.SourceVIPReady.Reason != v1alpha1.ReasonNotRequired {
					t.Errorf("source VIP %+v %+v, want none, NotRequired", d.Effective.SourceVIP, d.Effective.SourceVIPReady)
				}
			},
		},
		{
			name: "scenario-42-missing-source-vip-endpoint-is-to-be-created", cfg: config(false), view: view(true, ws2022),
			svcs:   []*corev1.Service{service("svc1")},
			slices: []*discoveryv1.EndpointSlice{remoteSlice("svc1")},
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
	})
}

// A backend in a node's pod CIDR without a remote-subnet route is treated
// as external, and reported.
func TestNoRemoteSubnetRouteIsReported(t *testing.T) {
	other := testbuild.Node("node-3", testbuild.PodCIDRs("192.168.3.0/24"))
	d := Compute(Input{NodeName: nodeName, Config: config(false), Nodes: []*corev1.Node{other},
		HNS:            view(true, ws2022, sourceVIPEP()),
		Services:       []*corev1.Service{service("svc1")},
		EndpointSlices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, testbuild.Endpoint("192.168.3.7", "node-3"))}})
	want := []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=10.0.0.1 be=[192.168.3.7]"}
	if diff := cmp.Diff(want, lbs(d)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ns/svc1 " + v1alpha1.ReasonNoRemoteSubnetRoute}, reasons(d)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
