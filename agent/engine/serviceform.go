package engine

import (
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

// Service is what the engine reads of a Service. Every agent keeps every Service of the cluster,
// so the agent's informer stores this form instead of the API's (agent/daemon/slim.go), as it
// does for slices (Slice): the API's Service is about 700 bytes before its strings and slices,
// this one about 170, and its addresses are parsed once, when the Service arrives, instead of at
// every computation of it. What a field holds is what the engine made of the API's field(s), so
// reading the API's Service and reading this give the same result.
type Service struct {
	Namespace, Name string
	// Proxied says winkernel programs the Service at all: it has a cluster IP (neither headless
	// nor ExternalName).
	Proxied bool
	// LoadBalancer is type: LoadBalancer.
	LoadBalancer bool
	// ExternalTrafficLocal and InternalTrafficLocal are the traffic policies set to Local.
	ExternalTrafficLocal, InternalTrafficLocal bool
	// ClientIPAffinity is sessionAffinity: ClientIP.
	ClientIPAffinity bool
	// PreserveDestination is the preserve-destination annotation set to "true"; Recreate the
	// winProxyOptimization annotation set to "disabled" (any case), as winkernel reads them.
	PreserveDestination, Recreate bool
	// HealthCheckNodePort is the API's.
	HealthCheckNodePort int32
	// ClusterIPs are the first cluster IP of each family (by familyIndex), unmapped; the zero Addr
	// for a family without one. The API's clusterIPs are read, or clusterIP when they are empty;
	// an address that does not parse is skipped.
	ClusterIPs [2]netip.Addr
	// ExternalIPs are the API's that parse, unmapped, in order.
	ExternalIPs []netip.Addr
	// Ingress are the load-balancer ingress IPs that parse, unmapped, in order, of the ingress
	// points in VIP mode (ipMode unset or VIP): with ipMode Proxy the cloud's load balancer
	// proxies, so the node must not.
	Ingress []netip.Addr
	Ports   []ServicePort
}

// ServicePort is what the engine reads of a Service port.
type ServicePort struct {
	Name string
	// Protocol is the API's, TCP when unset.
	Protocol corev1.Protocol
	// Port and NodePort are the API's.
	Port, NodePort int32
	// TargetPort is a numeric targetPort, 0 for a named one (the endpoints' ports decide then).
	TargetPort uint16
}

// ServiceOf reads a Service into the engine's form. It shares the Service's names; the
// protocol, a handful of values repeated across the cluster, is the package's constant where it
// is a known one.
func ServiceOf(svc *corev1.Service) *Service {
	sp := &svc.Spec
	s := &Service{
		Namespace: svc.Namespace, Name: svc.Name,
		Proxied:              sp.Type != corev1.ServiceTypeExternalName && sp.ClusterIP != "" && sp.ClusterIP != corev1.ClusterIPNone,
		LoadBalancer:         sp.Type == corev1.ServiceTypeLoadBalancer,
		ExternalTrafficLocal: sp.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal,
		InternalTrafficLocal: sp.InternalTrafficPolicy != nil && *sp.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal,
		ClientIPAffinity:     sp.SessionAffinity == corev1.ServiceAffinityClientIP,
		PreserveDestination:  svc.Annotations[AnnotationPreserveDestination] == "true",
		Recreate:             strings.EqualFold(svc.Annotations[AnnotationWinProxyOptimization], "disabled"),
		HealthCheckNodePort:  sp.HealthCheckNodePort,
		ExternalIPs:          parseAddrs(sp.ExternalIPs),
	}
	ips := sp.ClusterIPs
	if len(ips) == 0 {
		ips = []string{sp.ClusterIP}
	}
	firstOfEachFamily(&s.ClusterIPs, ips)
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IPMode != nil && *ing.IPMode != corev1.LoadBalancerIPModeVIP {
			continue
		}
		if ip, err := netip.ParseAddr(ing.IP); err == nil {
			s.Ingress = append(s.Ingress, ip.Unmap())
		}
	}
	if len(sp.Ports) > 0 {
		s.Ports = make([]ServicePort, len(sp.Ports))
		for i, p := range sp.Ports {
			s.Ports[i] = ServicePort{Name: p.Name, Protocol: knownProtocol(p.Protocol), Port: p.Port, NodePort: p.NodePort}
			if p.TargetPort.Type == intstr.Int {
				s.Ports[i].TargetPort = uint16(p.TargetPort.IntVal)
			}
		}
	}
	return s
}

// knownProtocol is p, TCP when unset, as the package's constant when it is one of the API's.
func knownProtocol(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	for _, known := range protocols {
		if known.name == p {
			return known.name
		}
	}
	return p
}

// parseAddrs are the addresses of ss that parse, unmapped; nil when none does.
func parseAddrs(ss []string) []netip.Addr {
	var out []netip.Addr
	for _, text := range ss {
		if ip, err := netip.ParseAddr(text); err == nil {
			out = append(out, ip.Unmap())
		}
	}
	return out
}

// clusterIP is the Service's cluster IP of the family, if it has one.
func (s *Service) clusterIP(fam v1alpha1.IPFamily) (netip.Addr, bool) {
	ip := s.ClusterIPs[familyIndex(fam)]
	return ip, ip.IsValid()
}

// DeepCopy copies s and everything it points to.
func (s *Service) DeepCopy() *Service {
	out := *s
	out.ExternalIPs = slices.Clone(s.ExternalIPs)
	out.Ingress = slices.Clone(s.Ingress)
	out.Ports = slices.Clone(s.Ports)
	return &out
}
