package engine

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/testbuild"
)

// A LoadBalancer ingress IP that is no unicast address is no frontend: whoever may write
// services/status can set 0.0.0.0 or 127.0.0.1 (the apiserver accepts them), and HNS would
// take 0.0.0.0 for every address of the host. It is skipped, the other ingress IPs are
// programmed, and the Service has a named problem.
func TestUnusableIngressIPIsNoFrontend(t *testing.T) {
	var cases []scenario
	for _, bad := range []string{"0.0.0.0", "127.0.0.1", "224.0.0.1", "255.255.255.255", "169.254.1.1"} {
		cases = append(cases, scenario{
			name: "ipv4-" + bad, cfg: config(false), view: view(false, ws2022),
			svcs:   []*corev1.Service{service("svc1", testbuild.LoadBalancer(3001, bad, "11.21.31.41"))},
			slices: []*discoveryv1.EndpointSlice{remoteSlice("svc1")},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=- be=[192.168.2.3]",
			},
			remotes:  []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
			problems: []string{"ns/svc1 " + v1alpha1.ReasonIngressIPUnusable},
		})
	}
	for _, bad := range []string{"::", "::1", "fe80::1", "ff02::1"} {
		cases = append(cases, scenario{
			name: "ipv6-" + bad, cfg: dualStackConfig(false), view: view(false, ws2022),
			svcs:   []*corev1.Service{dualStackService(testbuild.LoadBalancer(3001, bad))},
			slices: []*discoveryv1.EndpointSlice{remoteSlice("svc1")},
			check: func(t *testing.T, d *Desired) {
				for _, lb := range d.LoadBalancers {
					if lb.Key.VIP == ip(bad) || lb.Key.Family == FamilyIPv6 && lb.Key.Kind == KindIngress && lb.Key.VIP != ip("fd00::1") {
						t.Errorf("ingress %s programmed as %s", bad, lb.Key)
					}
				}
				if got := reasons(d); !slices.Contains(got, "ns/svc1 "+v1alpha1.ReasonIngressIPUnusable) {
					t.Errorf("problems %v, want %s", got, v1alpha1.ReasonIngressIPUnusable)
				}
			},
		})
	}
	runChecks(t, cases)
}

// runChecks is run for cases that check only what their check function says.
func runChecks(t *testing.T, cases []scenario) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Compute(Input{NodeName: nodeName, Config: tc.cfg, Services: tc.svcs, EndpointSlices: tc.slices, HNS: tc.view})
			if tc.check == nil {
				checkDesired(t, d, tc.lbs, tc.remotes, tc.problems)
				return
			}
			tc.check(t, d)
		})
	}
}
