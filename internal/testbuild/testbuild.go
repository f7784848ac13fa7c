// Package testbuild builds the Kubernetes objects winproxy's tests feed the controller, the
// resolver and the agent's engine: Nodes, Services, EndpointSlices and WindowsProxyConfigs. Each
// builder starts from the smallest object of its kind that means something to winproxy (a Windows
// node, a ClusterIP Service, an IPv4 EndpointSlice of a Service, a config on the cbr0 L2Bridge
// network) and takes functional options for the rest, so that a test says "a Windows node with
// kubelet v1.34.1 and pod CIDR 10.244.1.0/24" in the same words in every package, and shows only
// what matters to it.
//
// Options change only what they name and never fill defaults of their own: an object has exactly
// the fields its test gave it, as the API server or the kubelet would have set them.
//
// It is for tests only, imports nothing of winproxy but the API, and so may be used by the
// controller, the agent and the shared packages alike.
package testbuild

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

// NodeOption changes a Node that Node builds.
type NodeOption func(*corev1.Node)

// Node is a node named name with the label kubernetes.io/os=windows, which every node winproxy
// may select carries, and nothing else unless opts add it.
func Node(name string, opts ...NodeOption) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.OSLabel: "windows"}}}
	for _, o := range opts {
		o(n)
	}
	return n
}

// OS sets the kubernetes.io/os label; "" removes it, as on a node whose kubelet did not set it.
func OS(os string) NodeOption {
	return func(n *corev1.Node) {
		if os == "" {
			delete(n.Labels, v1alpha1.OSLabel)
			return
		}
		n.Labels = setKey(n.Labels, v1alpha1.OSLabel, os)
	}
}

// Labels adds labels to the node.
func Labels(kv map[string]string) NodeOption {
	return func(n *corev1.Node) {
		for k, v := range kv {
			n.Labels = setKey(n.Labels, k, v)
		}
	}
}

// Annotations adds annotations to the node.
func Annotations(kv map[string]string) NodeOption {
	return func(n *corev1.Node) {
		for k, v := range kv {
			n.Annotations = setKey(n.Annotations, k, v)
		}
	}
}

// Zone sets the topology.kubernetes.io/zone label, which topology-aware routing reads; ""
// leaves the node without a zone.
func Zone(z string) NodeOption {
	return func(n *corev1.Node) {
		if z != "" {
			n.Labels = setKey(n.Labels, corev1.LabelTopologyZone, z)
		}
	}
}

// Kubelet sets the kubelet version the node reports, e.g. "v1.34.1".
func Kubelet(version string) NodeOption {
	return func(n *corev1.Node) { n.Status.NodeInfo.KubeletVersion = version }
}

// PodCIDRs sets spec.podCIDRs as the node IPAM controller does; spec.podCIDR, which older
// clusters set alone, is left as it is.
func PodCIDRs(cidrs ...string) NodeOption {
	return func(n *corev1.Node) { n.Spec.PodCIDRs = cidrs }
}

// Addresses appends status addresses of type t, in order.
func Addresses(t corev1.NodeAddressType, addrs ...string) NodeOption {
	return func(n *corev1.Node) {
		for _, a := range addrs {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: t, Address: a})
		}
	}
}

// InternalIPs appends InternalIP addresses, in order: the node IPs winproxy proxies for.
func InternalIPs(ips ...string) NodeOption { return Addresses(corev1.NodeInternalIP, ips...) }

// ServiceOption changes a Service that Service builds.
type ServiceOption func(*corev1.Service)

// Service is a ClusterIP Service namespace/name without cluster IPs or ports unless opts add
// them.
func Service(namespace, name string, opts ...ServiceOption) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// ClusterIPs sets spec.clusterIPs, and spec.clusterIP to the first (the primary family).
func ClusterIPs(ips ...string) ServiceOption {
	return func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = ips[0], ips }
}

// TCPPort appends a TCP port; target, when not zero, is its targetPort.
func TCPPort(name string, port int32, target intstr.IntOrString) ServiceOption {
	return func(s *corev1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: name, Port: port, Protocol: corev1.ProtocolTCP, TargetPort: target})
	}
}

// NodePort makes the Service a NodePort one, with node port p on its first port.
func NodePort(p int32) ServiceOption {
	return func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports[0].NodePort = p
	}
}

// LoadBalancer makes the Service a LoadBalancer one, with node port np on its first port and the
// ingress IPs a cloud provider reported.
func LoadBalancer(np int32, ingress ...string) ServiceOption {
	return func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.Ports[0].NodePort = np
		for _, i := range ingress {
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: i})
		}
	}
}

// ExternalIPs sets spec.externalIPs.
func ExternalIPs(ips ...string) ServiceOption {
	return func(s *corev1.Service) { s.Spec.ExternalIPs = ips }
}

// ExternalTrafficLocal sets externalTrafficPolicy: Local.
func ExternalTrafficLocal() ServiceOption {
	return func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal }
}

// InternalTrafficLocal sets internalTrafficPolicy: Local.
func InternalTrafficLocal() ServiceOption {
	return func(s *corev1.Service) {
		p := corev1.ServiceInternalTrafficPolicyLocal
		s.Spec.InternalTrafficPolicy = &p
	}
}

// ClientIPAffinity sets sessionAffinity: ClientIP.
func ClientIPAffinity() ServiceOption {
	return func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }
}

// ServiceAnnotation sets one annotation.
func ServiceAnnotation(k, v string) ServiceOption {
	return func(s *corev1.Service) { s.Annotations = setKey(s.Annotations, k, v) }
}

// ServiceLabels adds labels to the Service.
func ServiceLabels(kv map[string]string) ServiceOption {
	return func(s *corev1.Service) {
		for k, v := range kv {
			s.Labels = setKey(s.Labels, k, v)
		}
	}
}

// SliceOption changes an EndpointSlice that EndpointSlice builds.
type SliceOption func(*discoveryv1.EndpointSlice)

// EndpointSlice is an IPv4 EndpointSlice namespace/name of the Service namespace/service (the
// kubernetes.io/service-name label), without ports or endpoints unless opts add them.
func EndpointSlice(namespace, service, name string, opts ...SliceOption) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// AddressType sets the slice's address family.
func AddressType(at discoveryv1.AddressType) SliceOption {
	return func(s *discoveryv1.EndpointSlice) { s.AddressType = at }
}

// SliceTCPPort appends a TCP port: the port the endpoints listen on, named as the Service port
// it serves.
func SliceTCPPort(name string, port int32) SliceOption {
	return func(s *discoveryv1.EndpointSlice) {
		proto := corev1.ProtocolTCP
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: &name, Port: &port, Protocol: &proto})
	}
}

// SliceLabels adds labels to the slice.
func SliceLabels(kv map[string]string) SliceOption {
	return func(s *discoveryv1.EndpointSlice) {
		for k, v := range kv {
			s.Labels = setKey(s.Labels, k, v)
		}
	}
}

// EndpointOption changes one endpoint that Endpoint appends.
type EndpointOption func(*discoveryv1.Endpoint)

// Endpoint appends an endpoint with address ip on node. Its conditions are unset, which the
// EndpointSlice API reads as ready and serving, unless opts set them.
func Endpoint(ip, node string, opts ...EndpointOption) SliceOption {
	return func(s *discoveryv1.EndpointSlice) {
		e := discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: &node}
		for _, o := range opts {
			o(&e)
		}
		s.Endpoints = append(s.Endpoints, e)
	}
}

// Ready sets the endpoint's ready condition.
func Ready(v bool) EndpointOption {
	return func(e *discoveryv1.Endpoint) { e.Conditions.Ready = &v }
}

// Serving sets the endpoint's serving condition.
func Serving(v bool) EndpointOption {
	return func(e *discoveryv1.Endpoint) { e.Conditions.Serving = &v }
}

// Terminating sets the endpoint's terminating condition.
func Terminating(v bool) EndpointOption {
	return func(e *discoveryv1.Endpoint) { e.Conditions.Terminating = &v }
}

// Conditions sets the endpoint's conditions from the compact form tables of cases use: "+r" or
// "-r" sets ready to true or false, "s" serving and "t" terminating alike, e.g. "-r+s+t" for an
// endpoint that terminates while still serving. Conditions it does not name stay unset; ""
// names none. It panics on anything else, a typo in a table.
func Conditions(c string) EndpointOption {
	if len(c)%2 != 0 {
		panic("testbuild.Conditions: " + c)
	}
	var opts []EndpointOption
	for i := 0; i < len(c); i += 2 {
		if c[i] != '+' && c[i] != '-' {
			panic("testbuild.Conditions: " + c)
		}
		v := c[i] == '+'
		switch c[i+1] {
		case 'r':
			opts = append(opts, Ready(v))
		case 's':
			opts = append(opts, Serving(v))
		case 't':
			opts = append(opts, Terminating(v))
		default:
			panic("testbuild.Conditions: " + c)
		}
	}
	return func(e *discoveryv1.Endpoint) {
		for _, o := range opts {
			o(e)
		}
	}
}

// TargetPod sets the endpoint's targetRef to the pod name.
func TargetPod(name string) EndpointOption {
	return func(e *discoveryv1.Endpoint) { e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: name} }
}

// ConfigOption changes a WindowsProxyConfig that Config builds.
type ConfigOption func(*v1alpha1.WindowsProxyConfig)

// Config is a WindowsProxyConfig named name for the L2Bridge network cbr0, selecting every
// Windows node; the rest of its spec is empty (as a client sends it, before the API server
// defaults it) unless opts set it.
func Config(name string, opts ...ConfigOption) *v1alpha1.WindowsProxyConfig {
	c := &v1alpha1.WindowsProxyConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.WindowsProxyConfigSpec{Network: v1alpha1.NetworkSpec{Name: "cbr0", Type: v1alpha1.NetworkTypeL2Bridge}},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Spec is the spec of Config("", opts...): for code that takes a spec alone.
func Spec(opts ...ConfigOption) *v1alpha1.WindowsProxyConfigSpec {
	return &Config("", opts...).Spec
}

// Selecting sets spec.nodeSelector to match the labels.
func Selecting(labels map[string]string) ConfigOption {
	return func(c *v1alpha1.WindowsProxyConfig) { c.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: labels} }
}

// CreatedAt sets the creationTimestamp, which decides which of two configs owns a node.
func CreatedAt(t time.Time) ConfigOption {
	return func(c *v1alpha1.WindowsProxyConfig) { c.CreationTimestamp = metav1.NewTime(t) }
}

// Defaulted sets the health check and sync fields as the CRD's defaults do: a root endpoint cbr0
// on port 10256, a sync period of 30s and at least 1s between syncs. (The CRD defaults other
// fields too; tests that need them set them.)
func Defaulted() ConfigOption {
	return func(c *v1alpha1.WindowsProxyConfig) {
		c.Spec.HealthCheck = v1alpha1.HealthCheckSpec{RootEndpointName: "cbr0", Port: 10256}
		c.Spec.Sync = v1alpha1.SyncSpec{PeriodSeconds: 30, MinPeriodSeconds: 1}
	}
}

// DSR sets spec.dsr.enabled.
func DSR() ConfigOption {
	return func(c *v1alpha1.WindowsProxyConfig) { c.Spec.DSR.Enabled = true }
}

// FeatureGates sets spec.featureGates.
func FeatureGates(g map[string]bool) ConfigOption {
	return func(c *v1alpha1.WindowsProxyConfig) { c.Spec.FeatureGates = g }
}

// NetworkType sets spec.network.type.
func NetworkType(t v1alpha1.NetworkType) ConfigOption {
	return func(c *v1alpha1.WindowsProxyConfig) { c.Spec.Network.Type = t }
}

// Overlay makes the network an Overlay one with the source VIP vip.
func Overlay(vip v1alpha1.SourceVIPSpec) ConfigOption {
	return func(c *v1alpha1.WindowsProxyConfig) {
		c.Spec.Network.Type = v1alpha1.NetworkTypeOverlay
		c.Spec.Overlay = &v1alpha1.OverlaySpec{SourceVIP: vip}
	}
}

func setKey(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}
