package engine

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// The fixture of reference §10 (winkernel's proxier_test.go): node IP
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

type svcOpt func(*corev1.Service)

func service(name string, opts ...svcOpt) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.ServiceSpec{
			Type:       corev1.ServiceTypeClusterIP,
			ClusterIP:  "10.20.30.41",
			ClusterIPs: []string{"10.20.30.41"},
			Ports:      []corev1.ServicePort{{Name: "p80", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}},
		},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func clusterIPs(ips ...string) svcOpt {
	return func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = ips[0], ips }
}

func nodePort(p int32) svcOpt {
	return func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports[0].NodePort = p
	}
}

func loadBalancer(np int32, ingress ...string) svcOpt {
	return func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.Ports[0].NodePort = np
		for _, i := range ingress {
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: i})
		}
	}
}

func etpLocal(s *corev1.Service) {
	s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
}

func itpLocal(s *corev1.Service) {
	p := corev1.ServiceInternalTrafficPolicyLocal
	s.Spec.InternalTrafficPolicy = &p
}

func externalIPs(ips ...string) svcOpt {
	return func(s *corev1.Service) { s.Spec.ExternalIPs = ips }
}

func clientIP(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }

func annotate(k, v string) svcOpt {
	return func(s *corev1.Service) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[k] = v
	}
}

// ep describes one EndpointSlice endpoint: ip@node, with optional
// conditions "r" ready, "s" serving, "t" terminating written as e.g. "-r+s+t".
type ep struct {
	ip, node string
	cond     string // "" = defaults (ready, serving, not terminating)
}

func slice(svcName, name string, port int32, eps ...ep) *discoveryv1.EndpointSlice {
	return sliceFam(svcName, name, discoveryv1.AddressTypeIPv4, port, eps...)
}

func sliceFam(svcName, name string, at discoveryv1.AddressType, port int32, eps ...ep) *discoveryv1.EndpointSlice {
	pn, proto := "p80", corev1.ProtocolTCP
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svcName}},
		AddressType: at,
		Ports:       []discoveryv1.EndpointPort{{Name: &pn, Port: &port, Protocol: &proto}},
	}
	for _, e := range eps {
		n := e.node
		ee := discoveryv1.Endpoint{Addresses: []string{e.ip}, NodeName: &n}
		for i := 0; i+1 < len(e.cond); i += 2 {
			v := e.cond[i] == '+'
			switch e.cond[i+1] {
			case 'r':
				ee.Conditions.Ready = &v
			case 's':
				ee.Conditions.Serving = &v
			case 't':
				ee.Conditions.Terminating = &v
			}
		}
		s.Endpoints = append(s.Endpoints, ee)
	}
	return s
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
