package engine

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/testbuild"
)

// The fixture of winkernel's proxier_test.go, which the scenarios
// (docs/design/dataplane.md#scenarios) are set in: node IP
// 10.0.0.1, source VIP 192.168.1.2, network TestNetwork, remote subnet
// 192.168.2.0/24 via PA 10.0.0.3.
const (
	nodeName  = "node-1"
	nodeIP    = "10.0.0.1"
	sourceVIP = "192.168.1.2"
	hostMAC   = "00-15-5D-AA-BB-CC"
)

var (
	ws2019 = hns.CapabilitiesFor(hns.Version{Major: 9, Minor: 5})
	ws2022 = hns.CapabilitiesFor(hns.Version{Major: 13, Minor: 3})
	noDSR  = hns.CapabilitiesFor(hns.Version{Major: 10, Minor: 0})
)

var cmpAddr = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

func config(dsr bool) v1alpha1.ResolvedProxyConfig {
	return v1alpha1.ResolvedProxyConfig{
		Network:   v1alpha1.NetworkSpec{Name: "TestNetwork", Type: v1alpha1.NetworkTypeAuto},
		EnableDSR: dsr,
		SourceVIP: &v1alpha1.ResolvedSourceVIP{Strategy: v1alpha1.SourceVIPStrategyStatic, Address: sourceVIP},
		NodeIPs:   []string{nodeIP},
	}
}

func network(overlay bool) hns.Network {
	n := hns.Network{ID: "123ABC", Name: "TestNetwork", Type: hns.NetworkTypeL2Bridge}
	if overlay {
		n.Type = hns.NetworkTypeOverlay
		n.RemoteSubnetRoutes = []hns.RemoteSubnetRoute{{
			DestinationPrefix: netip.MustParsePrefix("192.168.2.0/24"),
			ProviderAddress:   ip("10.0.0.3"),
			IsolationID:       4096,
		}}
	}
	return n
}

// localEP is a pod endpoint the CNI created.
func localEP(id string, ips ...string) hns.Endpoint {
	ep := hns.Endpoint{ID: id, Name: "pod-" + id, NetworkID: "123ABC"}
	for _, s := range ips {
		ep.IPs = append(ep.IPs, ip(s))
	}
	return ep
}

// sourceVIPEP is the local endpoint holding the source VIP.
func sourceVIPEP() hns.Endpoint {
	return hns.Endpoint{ID: "EP-SVIP", Name: "winproxy-" + sourceVIP, NetworkID: "123ABC", IPs: []netip.Addr{ip(sourceVIP)}}
}

func view(overlay bool, caps hns.Capabilities, eps ...hns.Endpoint) HNSView {
	return HNSView{Found: true, Network: network(overlay), Endpoints: eps, Capabilities: caps, HostMAC: hostMAC}
}

// service is name in namespace ns: ClusterIP 10.20.30.41 with TCP port p80 (80 to 80), changed by
// opts.
func service(name string, opts ...testbuild.ServiceOption) *corev1.Service {
	base := []testbuild.ServiceOption{testbuild.ClusterIPs("10.20.30.41"), testbuild.TCPPort("p80", 80, intstr.FromInt32(80))}
	return testbuild.Service("ns", name, append(base, opts...)...)
}

// slice is the IPv4 EndpointSlice ns/name of svcName, its endpoints listening on port (named p80).
func slice(svcName, name string, port int32, eps ...testbuild.SliceOption) *discoveryv1.EndpointSlice {
	return sliceFam(svcName, name, discoveryv1.AddressTypeIPv4, port, eps...)
}

// sliceFam is slice for the address family at.
func sliceFam(svcName, name string, at discoveryv1.AddressType, port int32, eps ...testbuild.SliceOption) *discoveryv1.EndpointSlice {
	base := []testbuild.SliceOption{testbuild.AddressType(at), testbuild.SliceTCPPort("p80", port)}
	return testbuild.EndpointSlice("ns", svcName, name, append(base, eps...)...)
}

// lbs renders the desired LBs one per line, in key order.
func lbs(d *Desired) []string {
	var out []string
	for _, lb := range d.SortedLoadBalancers() {
		var be []string
		for _, b := range lb.Backends {
			if b.Local {
				be = append(be, b.IP.String()+"@"+b.EndpointID)
			} else {
				be = append(be, b.IP.String())
			}
		}
		svip := "-"
		if lb.SourceVIP.IsValid() {
			svip = lb.SourceVIP.String()
		}
		s := fmt.Sprintf("%s int=%d flags=%d pm=%d svip=%s be=[%s]", lb.Key, lb.InternalPort, lb.Flags, lb.PortMappingFlags, svip, strings.Join(be, " "))
		if lb.Distribution != 0 {
			s += fmt.Sprintf(" dist=%d", lb.Distribution)
		}
		if lb.Recreate {
			s += " recreate"
		}
		out = append(out, s)
	}
	return out
}

// remotes renders the desired remote endpoints.
func remotes(d *Desired) []string {
	var out []string
	for _, r := range d.SortedRemoteEndpoints() {
		s := r.IP.String() + " mac=" + r.MAC
		if r.ProviderAddress.IsValid() {
			s += " pa=" + r.ProviderAddress.String()
		}
		if r.ServiceVIP {
			s += " svcvip"
		}
		out = append(out, s)
	}
	return out
}

func reasons(d *Desired) []string {
	var out []string
	for _, p := range d.Problems() {
		out = append(out, strings.TrimPrefix(p.Service+" ", " ")+p.Reason)
	}
	return out
}

// Scenarios (docs/design/dataplane.md#scenarios) that are not engine cases:
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

// checkDesired compares what d programs and reports with a scenario's expectations, in the
// summaries lbs, remotes and reasons give.
func checkDesired(t *testing.T, d *Desired, wantLBs, wantRemotes, wantProblems []string) {
	t.Helper()
	if diff := cmp.Diff(wantLBs, lbs(d)); diff != "" {
		t.Errorf("load balancers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantRemotes, remotes(d)); diff != "" {
		t.Errorf("remote endpoints (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantProblems, reasons(d)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func run(t *testing.T, cases []scenario) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Compute(Input{NodeName: nodeName, Config: tc.cfg, Services: tc.svcs, EndpointSlices: tc.slices, HNS: tc.view})
			checkDesired(t, d, tc.lbs, tc.remotes, tc.problems)
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

// remoteSlice is svc's slice with one remote backend, 192.168.2.3 on node-2.
func remoteSlice(svc string) *discoveryv1.EndpointSlice {
	return slice(svc, svc+"-a", 80, testbuild.Endpoint("192.168.2.3", "node-2"))
}

// lbService is svc1 as a LoadBalancer: node port 3001, ingress 11.21.31.41.
func lbService(opts ...testbuild.ServiceOption) *corev1.Service {
	return service("svc1", append([]testbuild.ServiceOption{testbuild.LoadBalancer(3001, "11.21.31.41")}, opts...)...)
}

// localPod is a pod endpoint of this node, 192.168.1.5.
func localPod() hns.Endpoint { return localEP("EP-L1", "192.168.1.5") }

func dualStackConfig(dsr bool) v1alpha1.ResolvedProxyConfig {
	c := withHC(config(dsr))
	c.DualStack = true
	c.NodeIPs = []string{nodeIP, "fd00:10::1"}
	return c
}

func dualStackService(opts ...testbuild.ServiceOption) *corev1.Service {
	return service("svc1", append([]testbuild.ServiceOption{testbuild.ClusterIPs("10.20.30.41", "fd00:20::41"), testbuild.LoadBalancer(3001, "11.21.31.41", "fd00::1")}, opts...)...)
}
