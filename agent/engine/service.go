package engine

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// Service annotations winkernel reads (reference §9).
const (
	AnnotationPreserveDestination  = "preserve-destination"
	AnnotationWinProxyOptimization = "winProxyOptimization"
)

// svcResult is one service's contribution to Desired.
type svcResult struct {
	lbs      []LoadBalancer
	remotes  []RemoteEndpoint
	problems []Problem
	// ips are the addresses looked up among local HNS endpoints: when one of
	// them changes, the service must be recomputed.
	ips []netip.Addr
}

// endpoint is one EndpointSlice endpoint for one service port.
type endpoint struct {
	ip                          netip.Addr
	port                        uint16
	local                       bool
	ready, serving, terminating bool
}

// computeService is the per-service part of the engine: a pure function of
// the node context, the service and its EndpointSlices (sorted by name).
func computeService(c *nodeContext, svc *corev1.Service, eps []*discoveryv1.EndpointSlice) svcResult {
	var r svcResult
	if !c.programmable || !proxied(svc) {
		return r
	}
	name := svc.Namespace + "/" + svc.Name
	problems := map[Problem]bool{}
	addProblem := func(reason, format string, args ...any) {
		problems[Problem{Service: name, Reason: reason, Message: fmt.Sprintf(format, args...)}] = true
	}
	seenIP := map[netip.Addr]bool{}
	lookup := func(ip netip.Addr) (string, bool) {
		if !seenIP[ip] {
			seenIP[ip] = true
			r.ips = append(r.ips, ip)
		}
		id, ok := c.local[ip]
		return id, ok
	}
	// Service-VIP endpoints are always wanted; backend remote endpoints
	// only when a load balancer uses them (winkernel creates them for every
	// processed backend, e.g. for an ITP=Local ClusterIP-only service too;
	// docs/differences-from-kube-proxy.md).
	remotes := map[netip.Addr]RemoteEndpoint{}
	candidates := map[netip.Addr]RemoteEndpoint{}

	etpLocal := svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	itpLocal := svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal
	// ETP=Local means DSR on the external LBs, and without HNS DSR it is not
	// honoured at all (§2.2): all backends, no DSR.
	localTrafficDSR := etpLocal && c.caps.DSR
	if etpLocal && !c.caps.DSR {
		addProblem(v1alpha1.ReasonExternalTrafficPolicyLocalNotHonoured, "externalTrafficPolicy: Local needs HNS DSR support, which this host lacks; external load balancers use every backend")
	}
	preserveDIP := svc.Annotations[AnnotationPreserveDestination] == "true" && c.caps.DSR
	recreate := strings.EqualFold(svc.Annotations[AnnotationWinProxyOptimization], "disabled")
	dist := hns.DistributionNone
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		if c.caps.SessionAffinity {
			dist = hns.DistributionSourceIP
		} else {
			addProblem(v1alpha1.ReasonSessionAffinityUnsupported, "sessionAffinity: ClientIP needs HNS 12.0 (Windows Server 2022); connections are spread without affinity")
		}
	}

	for _, fam := range c.families {
		fi := familyIndex(fam)
		clusterIP, ok := clusterIPOf(svc, fam)
		if !ok {
			continue
		}
		if c.overlay {
			// winkernel gives every ClusterIP of an overlay network an HNS
			// endpoint (host MAC, PA = node IP) unless one holds it already.
			if _, held := lookup(clusterIP); !held {
				remotes[clusterIP] = RemoteEndpoint{IP: clusterIP, MAC: c.hostMAC, ProviderAddress: c.nodeIP[fi], ServiceVIP: true}
			}
		}
		var externalIPs []netip.Addr
		if c.externalIPs {
			externalIPs = addrsOf(svc.Spec.ExternalIPs, fam)
		}
		ingress := ingressIPs(svc, fam)

		for _, sp := range svc.Spec.Ports {
			all := endpointsFor(eps, fam, sp, c.nodeName)
			proto := protocolNumber(sp.Protocol)

			// §3 step 1–2 and §5: the terminating checks only for services
			// with an ingress IP; with ETP=Local (and DSR) only local
			// endpoints count.
			var allTerminating, allNonServing bool
			if len(ingress) > 0 {
				allTerminating, allNonServing = terminatingState(all, localTrafficDSR)
			}
			someServing := !allNonServing
			availableForLB := !allTerminating && !allNonServing

			var backends, localBackends []Backend
			targetPort := uint16(0)
			if sp.TargetPort.Type == intstr.Int {
				targetPort = uint16(sp.TargetPort.IntVal)
			}
			ports := map[uint16]bool{}
			// An IP listed on two ports is one HNS endpoint: one backend
			// (winkernel lists it twice; docs/differences-from-kube-proxy.md).
			added := map[netip.Addr]bool{}
			containsNodeOrPublic := false
			for _, ep := range all {
				if itpLocal && localTrafficDSR && !ep.local {
					continue
				}
				if someServing && ((!allTerminating && !ep.ready) || !ep.serving) {
					continue
				}
				// HNS LBs have one internal port: winkernel takes the last
				// endpoint's (in "ip:port" order), also from a local
				// endpoint it then skips for want of an HNS endpoint.
				targetPort = ep.port
				ports[ep.port] = true
				if added[ep.ip] {
					continue
				}
				if id, ok := lookup(ep.ip); ok {
					// A local HNS endpoint wins even when Kubernetes calls the
					// endpoint remote (§7.5).
					b := Backend{IP: ep.ip, Local: true, EndpointID: id}
					backends = append(backends, b)
					localBackends = append(localBackends, b)
				} else if ep.local {
					addProblem(v1alpha1.ReasonLocalEndpointNotFound, "local endpoint %s has no HNS endpoint yet; it is left out", ep.ip)
					continue
				} else {
					re := RemoteEndpoint{IP: ep.ip, MAC: hns.ConjureMAC(ep.ip)}
					if c.overlay {
						re.ProviderAddress = c.providerAddress(ep.ip)
						if !re.ProviderAddress.IsValid() {
							if n := c.nodeFor(ep.ip); n != "" {
								addProblem(v1alpha1.ReasonNoRemoteSubnetRoute, "backend %s is in node %s's pod CIDR but HNS has no remote-subnet route for it yet; it is treated as an external address", ep.ip, n)
							}
							re.ProviderAddress = c.nodeIP[fi]
						}
					}
					candidates[ep.ip] = re
					backends = append(backends, Backend{IP: ep.ip})
				}
				if c.overlay && !ep.local {
					pa := c.providerAddress(ep.ip)
					if !pa.IsValid() || pa == ep.ip {
						containsNodeOrPublic = true
					}
				}
				added[ep.ip] = true
			}
			if len(ports) > 1 {
				addProblem(v1alpha1.ReasonMixedTargetPorts, "port %q: backends listen on different ports; HNS load balancers have one internal port, %d is used", sp.Name, targetPort)
			}
			if len(backends) == 0 {
				continue
			}
			byIP := func(a, b Backend) int { return a.IP.Compare(b.IP) }
			slices.SortFunc(backends, byIP)
			slices.SortFunc(localBackends, byIP)

			var sourceVIP netip.Addr
			if c.overlay {
				sourceVIP = c.sourceVIP
				if containsNodeOrPublic {
					sourceVIP = c.nodeIP[fi]
				}
			}
			mk := func(kind Kind, vip netip.Addr, ext, internal uint16, bs []Backend, flags hns.LBFlags, pm hns.PortMappingFlags, d hns.DistributionType) {
				if len(bs) == 0 {
					return
				}
				key := LBKey{Family: fam, Kind: kind, Service: name, Port: sp.Name, VIP: vip, Protocol: proto, ExternalPort: ext}
				if kind == KindHealthCheck {
					key.Service, key.Port = "", ""
				}
				if fam == v1alpha1.IPv6 {
					flags |= hns.LBFlagIPv6
				}
				r.lbs = append(r.lbs, LoadBalancer{Key: key, InternalPort: internal, Flags: flags, PortMappingFlags: pm,
					Distribution: d, SourceVIP: sourceVIP, Backends: slices.Clone(bs), Recreate: recreate})
			}
			dsrIf := func(b bool) hns.LBFlags {
				if b {
					return hns.LBFlagDSR
				}
				return 0
			}
			port := uint16(sp.Port)

			cipBackends := backends
			if itpLocal {
				cipBackends = localBackends
			}
			mk(KindClusterIP, clusterIP, port, targetPort, cipBackends, dsrIf(c.dsrActive), 0, dist)

			if sp.NodePort > 0 && availableForLB {
				npBackends := backends
				if preserveDIP || localTrafficDSR {
					npBackends = localBackends
				}
				mk(KindNodePort, netip.Addr{}, uint16(sp.NodePort), targetPort, npBackends, dsrIf(localTrafficDSR),
					hns.PortMappingVipExternalIP|hns.PortMappingLocalRoutedVIP, dist)
			}
			if availableForLB {
				eipBackends := backends
				if localTrafficDSR {
					eipBackends = localBackends
				}
				for _, ip := range externalIPs {
					mk(KindExternalIP, ip, port, targetPort, eipBackends, dsrIf(localTrafficDSR), hns.PortMappingVipExternalIP, dist)
				}
			}
			ingBackends := backends
			if preserveDIP || localTrafficDSR {
				ingBackends = localBackends
			}
			ingPM := hns.PortMappingVipExternalIP
			hcPM := hns.PortMappingFlags(0)
			if preserveDIP {
				ingPM |= hns.PortMappingUseMux | hns.PortMappingPreserveDIP
				hcPM = hns.PortMappingUseMux | hns.PortMappingPreserveDIP
			}
			hcPort := c.healthPort
			if svc.Spec.HealthCheckNodePort != 0 {
				hcPort = uint16(svc.Spec.HealthCheckNodePort)
			}
			root := c.root[fi]
			for _, ip := range ingress {
				mk(KindIngress, ip, port, targetPort, ingBackends, dsrIf(preserveDIP || localTrafficDSR), ingPM, dist)
				if root.Local && availableForLB {
					// Never DSR, no affinity. winkernel also leaves out the
					// IPv6 flag on the v6 proxier, which HNS refuses with an
					// IPv6 VIP; mk sets it (a deliberate difference, see
					// docs/differences-from-kube-proxy.md).
					mk(KindHealthCheck, ip, hcPort, hcPort, []Backend{root}, 0, hcPM, hns.DistributionNone)
				}
			}
		}
	}

	for _, lb := range r.lbs {
		for _, b := range lb.Backends {
			if !b.Local {
				remotes[b.IP] = candidates[b.IP]
			}
		}
	}
	for _, re := range remotes {
		r.remotes = append(r.remotes, re)
	}
	slices.SortFunc(r.remotes, func(a, b RemoteEndpoint) int { return a.IP.Compare(b.IP) })
	for p := range problems {
		r.problems = append(r.problems, p)
	}
	sortProblems(r.problems)
	return r
}

func sortProblems(ps []Problem) {
	slices.SortFunc(ps, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Reason, b.Reason), cmp.Compare(a.Message, b.Message))
	})
}

// proxied reports whether winkernel programs the service at all: not
// ExternalName, not headless (§2).
func proxied(svc *corev1.Service) bool {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return false
	}
	return svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

func clusterIPOf(svc *corev1.Service, fam v1alpha1.IPFamily) (netip.Addr, bool) {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 {
		ips = []string{svc.Spec.ClusterIP}
	}
	a := addrsOf(ips, fam)
	if len(a) == 0 {
		return netip.Addr{}, false
	}
	return a[0], true
}

func addrsOf(ss []string, fam v1alpha1.IPFamily) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		if ip, err := netip.ParseAddr(s); err == nil && familyOf(ip) == fam {
			out = append(out, ip.Unmap())
		}
	}
	return out
}

// ingressIPs are the load-balancer ingress IPs of the family in VIP mode;
// ipMode: Proxy means the cloud LB proxies, so the node must not (§2.1).
func ingressIPs(svc *corev1.Service, fam v1alpha1.IPFamily) []netip.Addr {
	var out []netip.Addr
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IPMode != nil && *ing.IPMode != corev1.LoadBalancerIPModeVIP {
			continue
		}
		out = append(out, addrsOf([]string{ing.IP}, fam)...)
	}
	return out
}

func protocolNumber(p corev1.Protocol) uint32 {
	switch p {
	case corev1.ProtocolTCP, "":
		return hns.ProtocolTCP
	case corev1.ProtocolUDP:
		return hns.ProtocolUDP
	case corev1.ProtocolSCTP:
		return hns.ProtocolSCTP
	}
	return 0
}

// endpointsFor collects the endpoints of one service port and family from
// the service's slices (sorted by name), as kube-proxy's endpoint-slice
// cache does (pkg/proxy/endpointslicecache.go): first address only, nil
// conditions defaulted (ready, serving true; terminating false). The cache
// keys endpoints by IP and port: a later entry for the same IP and port
// replaces an earlier one unless the later one is terminating (a pod that
// reuses a terminating pod's IP wins; of two entries that are both
// terminating, or both not, the last one wins resp. the first stays).
// The same IP on two ports stays two endpoints. The result is sorted so the
// output does not depend on slice order.
func endpointsFor(eps []*discoveryv1.EndpointSlice, fam v1alpha1.IPFamily, sp corev1.ServicePort, nodeName string) []endpoint {
	want := discoveryv1.AddressTypeIPv4
	if fam == v1alpha1.IPv6 {
		want = discoveryv1.AddressTypeIPv6
	}
	proto := sp.Protocol
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	type ipPort struct {
		ip   netip.Addr
		port uint16
	}
	byKey := map[ipPort]endpoint{}
	for _, s := range eps {
		if s.AddressType != want {
			continue
		}
		var port *int32
		for _, p := range s.Ports {
			pp := corev1.ProtocolTCP
			if p.Protocol != nil {
				pp = *p.Protocol
			}
			if deref(p.Name) == sp.Name && pp == proto {
				port = p.Port
				break
			}
		}
		if port == nil {
			continue
		}
		for _, e := range s.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			ip, err := netip.ParseAddr(e.Addresses[0])
			if err != nil || familyOf(ip) != fam {
				continue
			}
			ep := endpoint{
				ip:          ip.Unmap(),
				port:        uint16(*port),
				local:       e.NodeName != nil && *e.NodeName == nodeName,
				ready:       e.Conditions.Ready == nil || *e.Conditions.Ready,
				serving:     e.Conditions.Serving == nil || *e.Conditions.Serving,
				terminating: e.Conditions.Terminating != nil && *e.Conditions.Terminating,
			}
			k := ipPort{ep.ip, ep.port}
			if _, dup := byKey[k]; dup && ep.terminating {
				continue
			}
			byKey[k] = ep
		}
	}
	out := make([]endpoint, 0, len(byKey))
	for _, ep := range byKey {
		out = append(out, ep)
	}
	// The cache's order: by the endpoint's "ip:port" string, which decides
	// the internal port when backends listen on several (computeService).
	slices.SortFunc(out, func(a, b endpoint) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// String is the endpoint as kube-proxy names it, "ip:port" ("[ip]:port").
func (e endpoint) String() string {
	return netip.AddrPortFrom(e.ip, e.port).String()
}

// terminatingState is winkernel's isAllEndpointsTerminating and
// isAllEndpointsNonServing (§5): with localTrafficDSR remote endpoints are
// ignored in both (the code, not the KEP's first bullet), endpoints that
// failed readiness without terminating do not count as terminating, and
// both are vacuously true when nothing is considered.
func terminatingState(eps []endpoint, localTrafficDSR bool) (allTerminating, allNonServing bool) {
	allTerminating, allNonServing = true, true
	for _, ep := range eps {
		if localTrafficDSR && !ep.local {
			continue
		}
		if ep.serving {
			allNonServing = false
		}
		if !ep.ready && !ep.terminating {
			continue
		}
		if !ep.terminating {
			allTerminating = false
		}
	}
	return allTerminating, allNonServing
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
