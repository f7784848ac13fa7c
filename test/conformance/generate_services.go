package conformance

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// families of a new service.
func (g *gen) serviceFamilies() []string {
	if !g.dual {
		return []string{v4}
	}
	switch g.r.IntN(4) {
	case 0:
		return []string{v6}
	case 1:
		return []string{v4}
	case 2:
		return []string{v6, v4}
	}
	return []string{v4, v6}
}

func (g *gen) claim(vip string, proto corev1.Protocol, port int32) bool {
	u := frontendUse{vip, proto, port}
	if g.frontends[u] {
		return false
	}
	g.frontends[u] = true
	return true
}

func (g *gen) release(vip string, proto corev1.Protocol, port int32) {
	delete(g.frontends, frontendUse{vip, proto, port})
}

var servicePorts = []int32{80, 443, 53, 8080, 9090, 5000, 6379}

// addService adds a service with its slices to step s.
func (g *gen) addService(s *Step) {
	r := g.r
	g.svcSeq++
	name := fmt.Sprintf("svc-%d", g.svcSeq)
	ns := []string{"default", "apps"}[r.IntN(2)]
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}}
	st := &svcState{svc: svc}
	g.services[ns+"/"+name] = st
	switch x := r.IntN(20); {
	case x == 0:
		svc.Spec.Type = corev1.ServiceTypeExternalName
		svc.Spec.ExternalName = "example.com"
		s.Services = append(s.Services, svc)
		return
	case x == 1:
		svc.Spec.Type, svc.Spec.ClusterIP, svc.Spec.ClusterIPs = corev1.ServiceTypeClusterIP, corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
	case x < 9:
		svc.Spec.Type = corev1.ServiceTypeClusterIP
	case x < 14:
		svc.Spec.Type = corev1.ServiceTypeNodePort
	default:
		svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	}
	fams := g.serviceFamilies()
	for _, f := range fams {
		svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, corev1.IPFamily(f))
	}
	if len(fams) > 1 {
		svc.Spec.IPFamilyPolicy = new(corev1.IPFamilyPolicyPreferDualStack)
	}
	if svc.Spec.ClusterIP == "" {
		for _, f := range fams {
			svc.Spec.ClusterIPs = append(svc.Spec.ClusterIPs, clusterIP(g.svcSeq, f))
		}
		svc.Spec.ClusterIP = svc.Spec.ClusterIPs[0]
	}
	nports := 1 + r.IntN(3)
	for i := range nports {
		p := corev1.ServicePort{Name: fmt.Sprintf("p%d", i), Protocol: corev1.ProtocolTCP}
		if nports == 1 && g.pick(0.3) {
			p.Name = ""
		}
		if g.pick(0.25) {
			p.Protocol = corev1.ProtocolUDP
		}
		for {
			p.Port = servicePorts[r.IntN(len(servicePorts))]
			if !slices.ContainsFunc(svc.Spec.Ports, func(o corev1.ServicePort) bool { return o.Port == p.Port && o.Protocol == p.Protocol }) {
				break
			}
		}
		if g.pick(0.3) {
			p.TargetPort = intstr.FromString("tp-" + p.Name)
		} else {
			p.TargetPort = intstr.FromInt32([]int32{p.Port, 8080, 8443, 9376}[r.IntN(4)])
		}
		svc.Spec.Ports = append(svc.Spec.Ports, p)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		g.editService(svc, true)
	}
	s.Services = append(s.Services, svc)
	g.makeSlices(st, s)
}

func clusterIP(i int, fam string) string {
	if fam == v6 {
		return addr("fd00:96::%x", i)
	}
	return fmt.Sprintf("10.96.%d.%d", i/250, i%250+1)
}

// editService (re)draws the service's type-dependent settings: node ports,
// external IPs, ingress IPs, traffic policies, affinity, annotations.
// Frontends it held are released first.
func (g *gen) editService(svc *corev1.Service, fresh bool) {
	r := g.r
	if !fresh {
		g.releaseFrontends(svc)
	}
	spec := &svc.Spec
	if !fresh && g.pick(0.3) {
		spec.Type = []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer}[r.IntN(3)]
	}
	fams := familiesOf(svc)
	external := spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if !external {
			p.NodePort = 0
		} else if p.NodePort == 0 || g.pick(0.1) {
			g.nodePort++
			p.NodePort = 30000 + g.nodePort
		}
	}
	spec.ExternalIPs = nil
	if g.pick(0.15) {
		for _, f := range fams {
			g.extIP++
			ip := fmt.Sprintf("192.0.2.%d", g.extIP%250+1)
			if f == v6 {
				ip = addr("2001:db8:2::%x", g.extIP)
			}
			spec.ExternalIPs = append(spec.ExternalIPs, ip)
		}
	}
	spec.ExternalTrafficPolicy, spec.HealthCheckNodePort = "", 0
	if external || len(spec.ExternalIPs) > 0 {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		if g.pick(0.4) {
			spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		g.hcPort++
		spec.HealthCheckNodePort = 32000 + g.hcPort
	}
	spec.InternalTrafficPolicy = new(corev1.ServiceInternalTrafficPolicyCluster)
	if g.pick(0.2) {
		spec.InternalTrafficPolicy = new(corev1.ServiceInternalTrafficPolicyLocal)
	}
	spec.SessionAffinity, spec.SessionAffinityConfig = corev1.ServiceAffinityNone, nil
	if g.pick(0.2) {
		spec.SessionAffinity = corev1.ServiceAffinityClientIP
		spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: new(int32(10800))}}
	}
	svc.Annotations = nil
	if g.pick(0.15) {
		svc.Annotations = map[string]string{"preserve-destination": "true"}
	}
	if g.pick(0.1) {
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations["winProxyOptimization"] = []string{"DISABLED", "disabled"}[r.IntN(2)]
	}
	svc.Status = corev1.ServiceStatus{}
	if spec.Type == corev1.ServiceTypeLoadBalancer && g.pick(0.9) {
		for _, f := range fams {
			for range 1 + r.IntN(2) {
				ing := corev1.LoadBalancerIngress{IP: g.ingressIP(svc, f)}
				if ing.IP == "" {
					continue
				}
				if g.pick(0.1) {
					ing.IPMode = new(corev1.LoadBalancerIPModeProxy)
				} else if g.pick(0.3) {
					ing.IPMode = new(corev1.LoadBalancerIPModeVIP)
				}
				svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, ing)
			}
		}
	}
	g.claimFrontends(svc)
}

func familiesOf(svc *corev1.Service) []string {
	var out []string
	for _, f := range svc.Spec.IPFamilies {
		out = append(out, string(f))
	}
	return out
}

// ingressIP picks an ingress IP for svc: sometimes one another service
// already uses (cloud load balancers share IPs across services on other
// ports), if none of svc's ports is taken there.
func (g *gen) ingressIP(svc *corev1.Service, fam string) string {
	if g.pick(0.3) {
		for _, ip := range g.ingress {
			if isV6(ip) != (fam == v6) || slices.ContainsFunc(svc.Status.LoadBalancer.Ingress, func(i corev1.LoadBalancerIngress) bool { return i.IP == ip }) {
				continue
			}
			if g.portsFree(svc, ip) {
				return ip
			}
		}
	}
	g.ingIP++
	ip := fmt.Sprintf("203.0.113.%d", g.ingIP%250+1)
	if fam == v6 {
		ip = addr("2001:db8:113::%x", g.ingIP)
	}
	g.ingress = append(g.ingress, ip)
	return ip
}

func isV6(ip string) bool { return netip.MustParseAddr(ip).Is6() }

func (g *gen) portsFree(svc *corev1.Service, ip string) bool {
	for _, p := range svc.Spec.Ports {
		if g.frontends[frontendUse{ip, p.Protocol, p.Port}] {
			return false
		}
	}
	return true
}

// claimFrontends records the frontends of svc's ingress and external IPs.
// Health-check LBs are shared by design and need no claim.
func (g *gen) claimFrontends(svc *corev1.Service) {
	for _, ip := range vipsOf(svc) {
		for _, p := range svc.Spec.Ports {
			g.claim(ip, p.Protocol, p.Port)
		}
	}
}

func (g *gen) releaseFrontends(svc *corev1.Service) {
	for _, ip := range vipsOf(svc) {
		for _, p := range svc.Spec.Ports {
			g.release(ip, p.Protocol, p.Port)
		}
	}
}

func vipsOf(svc *corev1.Service) []string {
	out := slices.Clone(svc.Spec.ExternalIPs)
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		out = append(out, ing.IP)
	}
	return out
}
