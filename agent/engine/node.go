package engine

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// defaultHealthzPort is kube-proxy's default --healthz-bind-address port,
// the health-check LB port of services without a healthCheckNodePort.
const defaultHealthzPort = 10256

// shared is the part of the node context every service computation reads.
// When it changes every service is recomputed; it is compared by value.
type shared struct {
	nodeName     string
	overlay      bool
	programmable bool
	families     []v1alpha1.IPFamily
	nodeIP       [2]netip.Addr // by familyIndex
	sourceVIP    netip.Addr
	hostMAC      string
	caps         hns.Capabilities
	dsrActive    bool
	externalIPs  bool
	healthPort   uint16
	// root is the health-check backend (by family); zero Backend: no
	// health-check LBs.
	root      [2]Backend
	routes    []hns.RemoteSubnetRoute
	nodeCIDRs []nodeCIDR
}

type nodeCIDR struct {
	prefix netip.Prefix
	node   string
}

// nodeContext is shared plus what is only reported.
type nodeContext struct {
	shared
	effective    Effective
	problems     []Problem
	svipEndpoint *SourceVIPEndpoint
	// local maps an IP to the local HNS endpoint holding it.
	local map[netip.Addr]string
}

func familyIndex(f v1alpha1.IPFamily) int {
	if f == v1alpha1.IPv6 {
		return 1
	}
	return 0
}

func familyOf(a netip.Addr) v1alpha1.IPFamily {
	if a.Is4() || a.Is4In6() {
		return v1alpha1.IPv4
	}
	return v1alpha1.IPv6
}

// newNodeContext derives the node context: what every service computation
// needs, and the node-level part of Effective.
func newNodeContext(nodeName string, cfg *v1alpha1.ResolvedProxyConfig, node *corev1.Node, nodes []*corev1.Node, v *HNSView) *nodeContext {
	c := &nodeContext{local: map[netip.Addr]string{}}
	s := &c.shared
	e := &c.effective
	s.nodeName = nodeName
	s.caps = v.Capabilities
	s.hostMAC = v.HostMAC
	s.programmable = true

	for _, ep := range v.Endpoints {
		if ep.Remote {
			continue
		}
		for _, ip := range ep.IPs {
			// Two local endpoints never share an IP; the first listed wins.
			if _, dup := c.local[ip]; !dup {
				c.local[ip] = ep.ID
			}
		}
	}

	for _, a := range cfg.NodeIPs {
		if ip, err := netip.ParseAddr(a); err == nil {
			if !s.nodeIP[familyIndex(familyOf(ip))].IsValid() {
				s.nodeIP[familyIndex(familyOf(ip))] = ip.Unmap()
			}
		}
	}
	if node != nil {
		for _, a := range node.Status.Addresses {
			if a.Type != corev1.NodeInternalIP {
				continue
			}
			if ip, err := netip.ParseAddr(a.Address); err == nil && !s.nodeIP[familyIndex(familyOf(ip))].IsValid() {
				s.nodeIP[familyIndex(familyOf(ip))] = ip.Unmap()
			}
		}
	}

	// Network.
	e.Network = v1alpha1.NetworkStatus{Name: cfg.Network.Name}
	switch {
	case !v.Found:
		e.NetworkReady = Status{Reason: v1alpha1.ReasonNetworkNotFound,
			Message: fmt.Sprintf("no HNS network is named %q; waiting for the CNI to create it", cfg.Network.Name)}
	case typeMismatch(cfg.Network.Type, v.Network.Type):
		e.Network.ID, e.Network.Type = v.Network.ID, string(v.Network.Type)
		e.NetworkReady = Status{Reason: v1alpha1.ReasonNetworkTypeMismatch,
			Message: fmt.Sprintf("HNS network %q is %s but the config expects %s; HNS is left as it is", cfg.Network.Name, v.Network.Type, cfg.Network.Type)}
	default:
		e.Network.ID, e.Network.Type = v.Network.ID, string(v.Network.Type)
		e.NetworkReady = Status{OK: true, Reason: v1alpha1.ReasonNetworkFound,
			Message: fmt.Sprintf("HNS network %q (%s) found", cfg.Network.Name, v.Network.Type)}
	}
	if !e.NetworkReady.OK {
		c.block(e.NetworkReady.Reason, e.NetworkReady.Message)
	}
	s.overlay = v.Found && v.Network.IsOverlay()
	if s.overlay {
		s.routes = v.Network.RemoteSubnetRoutes
		for _, n := range nodes {
			if n == nil || n.Name == nodeName {
				continue
			}
			for _, cidr := range podCIDRs(n) {
				if p, err := netip.ParsePrefix(cidr); err == nil {
					s.nodeCIDRs = append(s.nodeCIDRs, nodeCIDR{prefix: p.Masked(), node: n.Name})
				}
			}
		}
	}
	if v.Found && !s.caps.APIV2 {
		c.block(v1alpha1.ReasonHNSUnsupported, "HNS API v2 (HNS 9.2, Windows Server 2019) is required")
	}

	// IP families: the primary family is the node IP's; dual-stack needs
	// L2Bridge and HNS 11.10 (reference §6.2).
	primary := v1alpha1.IPv4
	if !s.nodeIP[0].IsValid() && s.nodeIP[1].IsValid() {
		primary = v1alpha1.IPv6
	}
	s.families = []v1alpha1.IPFamily{primary}
	switch {
	case !cfg.DualStack:
		e.DualStackDowngraded = Status{Reason: v1alpha1.ReasonDualStackNotRequested, Message: "dual-stack is not requested"}
	case s.overlay:
		e.DualStackDowngraded = Status{OK: true, Reason: v1alpha1.ReasonOverlayNetwork,
			Message: fmt.Sprintf("overlay networks support one IP family; only %s is proxied", primary)}
	case !s.caps.IPv6DualStack:
		e.DualStackDowngraded = Status{OK: true, Reason: v1alpha1.ReasonHNSUnsupported,
			Message: fmt.Sprintf("HNS older than 11.10 has no dual-stack; only %s is proxied", primary)}
	default:
		s.families = []v1alpha1.IPFamily{v1alpha1.IPv4, v1alpha1.IPv6}
		e.DualStackDowngraded = Status{Reason: v1alpha1.ReasonDualStackActive, Message: "IPv4 and IPv6 are proxied"}
	}
	e.IPFamilies = s.families

	// DSR on ClusterIP LBs (§2.2): requested by config, possible only with
	// HNS DSR support. The controller already checked the WinDSR gate.
	e.DSR.Requested = cfg.EnableDSR
	switch {
	case !cfg.EnableDSR:
		e.DSRActive = Status{Reason: v1alpha1.ReasonDSRNotRequested, Message: "dsr.enabled is false"}
	case !s.caps.DSR:
		e.DSRActive = Status{Reason: v1alpha1.ReasonDSRUnsupported,
			Message: "this host's HNS has no DSR support; ClusterIP load balancers are programmed without DSR"}
	default:
		s.dsrActive = true
		e.DSR.Active = true
		e.DSRActive = Status{OK: true, Reason: v1alpha1.ReasonDSREnabled, Message: "ClusterIP load balancers use DSR"}
	}

	s.externalIPs = true
	if on, set := cfg.FeatureGates["AllowServiceExternalIPs"]; set && !on {
		s.externalIPs = false
	}

	// Health-check LBs forward to the host's root endpoint, found by name.
	s.healthPort = defaultHealthzPort
	if cfg.HealthCheck.Port > 0 {
		s.healthPort = uint16(cfg.HealthCheck.Port)
	}
	if cfg.HealthCheck.ForwardVIP {
		name := cfg.HealthCheck.RootEndpointName
		if name == "" {
			name = "cbr0"
		}
		if ep, ok := endpointByName(v.Endpoints, name); ok {
			for _, ip := range ep.IPs {
				i := familyIndex(familyOf(ip))
				if !s.root[i].Local {
					s.root[i] = Backend{IP: ip, Local: true, EndpointID: ep.ID}
				}
			}
			for i := range s.root {
				if !s.root[i].Local && ep.ID != "" {
					// An endpoint without an address of this family still
					// forwards the health port to the host (winkernel uses
					// its ID regardless of family).
					s.root[i] = Backend{Local: true, EndpointID: ep.ID}
				}
			}
		} else {
			c.problems = append(c.problems, Problem{Reason: v1alpha1.ReasonHealthCheckEndpointMissing,
				Message: fmt.Sprintf("healthCheck.forwardVIP is set but no HNS endpoint is named %q; no health-check load balancers", name)})
		}
	}

	c.resolveSourceVIP(cfg, v, primary)
	e.Programmable = s.programmable
	return c
}

func (c *nodeContext) block(reason, msg string) {
	if c.programmable {
		c.programmable = false
		c.effective.Blocked = Status{OK: true, Reason: reason, Message: msg}
	}
}

func typeMismatch(want v1alpha1.NetworkType, got hns.NetworkType) bool {
	switch want {
	case v1alpha1.NetworkTypeOverlay:
		return !got.IsOverlay()
	case v1alpha1.NetworkTypeL2Bridge:
		return got.IsOverlay()
	}
	return false
}

func podCIDRs(n *corev1.Node) []string {
	if len(n.Spec.PodCIDRs) > 0 {
		return n.Spec.PodCIDRs
	}
	if n.Spec.PodCIDR != "" {
		return []string{n.Spec.PodCIDR}
	}
	return nil
}

func endpointByName(eps []hns.Endpoint, name string) (hns.Endpoint, bool) {
	for _, ep := range eps {
		if ep.Name == name {
			return ep, true
		}
	}
	return hns.Endpoint{}, false
}

// resolveSourceVIP applies reference §4: overlay needs a source VIP and a
// local endpoint holding it; L2Bridge never uses one (LBs get an empty
// SourceVIP even when one is configured).
func (c *nodeContext) resolveSourceVIP(cfg *v1alpha1.ResolvedProxyConfig, v *HNSView, primary v1alpha1.IPFamily) {
	e := &c.effective
	e.SourceVIP.Origin = v1alpha1.SourceVIPOriginNone
	if !c.overlay {
		e.SourceVIPOK = Status{OK: true, Reason: v1alpha1.ReasonNotRequired, Message: "the network is not overlay: HNS picks the source address"}
		return
	}
	if !c.nodeIP[familyIndex(primary)].IsValid() {
		c.problems = append(c.problems, Problem{Reason: v1alpha1.ReasonNodeIPUnknown, Message: "overlay needs the node's IP (spec.proxy.nodeIPs or the Node's InternalIP)"})
		c.block(v1alpha1.ReasonNodeIPUnknown, "the node's IP is unknown")
	}
	if c.hostMAC == "" {
		c.problems = append(c.problems, Problem{Reason: v1alpha1.ReasonHostMACUnknown, Message: "overlay needs the MAC of the interface holding the node IP"})
		c.block(v1alpha1.ReasonHostMACUnknown, "could not find the host MAC address for the node IP")
	}
	fail := func(reason, msg string) {
		e.SourceVIPOK = Status{Reason: reason, Message: msg}
		c.block(reason, msg)
	}
	sv := cfg.SourceVIP
	if sv == nil {
		fail(v1alpha1.ReasonSourceVIPUnavailable, "the network is overlay but the config has no sourceVIP")
		return
	}
	var ip netip.Addr
	switch sv.Strategy {
	case v1alpha1.SourceVIPStrategyEndpoint:
		e.SourceVIP.Origin = v1alpha1.SourceVIPOriginEndpoint
		ep, ok := endpointByName(v.Endpoints, sv.EndpointName)
		if !ok {
			fail(v1alpha1.ReasonSourceVIPEndpointMissing, fmt.Sprintf("no HNS endpoint is named %q yet; overlay load balancers are not programmed", sv.EndpointName))
			return
		}
		for _, a := range ep.IPs {
			if familyOf(a) == primary {
				ip = a
				break
			}
		}
		if !ip.IsValid() {
			fail(v1alpha1.ReasonSourceVIPUnavailable, fmt.Sprintf("HNS endpoint %q has no %s address", sv.EndpointName, primary))
			return
		}
	case v1alpha1.SourceVIPStrategyStatic, v1alpha1.SourceVIPStrategyCreate:
		e.SourceVIP.Origin = v1alpha1.SourceVIPOriginStatic
		if sv.Strategy == v1alpha1.SourceVIPStrategyCreate {
			e.SourceVIP.Origin = v1alpha1.SourceVIPOriginCreate
		}
		a, err := netip.ParseAddr(sv.Address)
		if err != nil {
			fail(v1alpha1.ReasonSourceVIPUnavailable, fmt.Sprintf("sourceVIP.address %q is not an IP address", sv.Address))
			return
		}
		ip = a.Unmap()
	default:
		fail(v1alpha1.ReasonSourceVIPUnavailable, fmt.Sprintf("unknown sourceVIP strategy %q", sv.Strategy))
		return
	}
	if familyOf(ip) != primary {
		// winkernel only logs this (§6.1 #6) and then fails every LB; saying
		// so and leaving HNS alone is kinder.
		fail(v1alpha1.ReasonSourceVIPUnavailable, fmt.Sprintf("source VIP %s is not %s, the node's family", ip, primary))
		return
	}
	e.SourceVIP.Address = ip.String()
	c.sourceVIP = ip

	holder, held := holderOf(v.Endpoints, ip)
	switch {
	case held && sv.Strategy == v1alpha1.SourceVIPStrategyCreate && !hns.HasOwnedName(holder):
		// The address came from the pod CIDR: an endpoint we did not create
		// holding it is a pod, whose IP must not be taken (k/k #100962).
		fail(v1alpha1.ReasonSourceVIPConflict, fmt.Sprintf("HNS endpoint %s (%q) already holds %s; choose an address outside the CNI's IPAM range", holder.ID, holder.Name, ip))
		return
	case held:
		e.SourceVIPOK = Status{OK: true, Reason: v1alpha1.ReasonSourceVIPFound, Message: fmt.Sprintf("source VIP %s is held by HNS endpoint %s", ip, holder.ID)}
	default:
		c.svipEndpoint = &SourceVIPEndpoint{IP: ip, MAC: c.hostMAC}
		e.SourceVIPOK = Status{OK: true, Reason: v1alpha1.ReasonSourceVIPFound, Message: fmt.Sprintf("source VIP %s; its local HNS endpoint is to be created", ip)}
	}
}

// holderOf finds the endpoint holding ip, preferring a local one.
func holderOf(eps []hns.Endpoint, ip netip.Addr) (hns.Endpoint, bool) {
	var remote *hns.Endpoint
	for i := range eps {
		if eps[i].HasIP(ip) {
			if !eps[i].Remote {
				return eps[i], true
			}
			if remote == nil {
				remote = &eps[i]
			}
		}
	}
	if remote != nil {
		return *remote, true
	}
	return hns.Endpoint{}, false
}

// providerAddress is winkernel's PA lookup (§4.1): over all routes, the last
// whose prefix contains ip or whose PA equals ip wins. Zero means none.
func (s *shared) providerAddress(ip netip.Addr) netip.Addr {
	var pa netip.Addr
	for _, r := range s.routes {
		if r.DestinationPrefix.Contains(ip) || r.ProviderAddress == ip {
			pa = r.ProviderAddress
		}
	}
	return pa
}

// nodeFor names the other node whose pod CIDR holds ip, if any.
func (s *shared) nodeFor(ip netip.Addr) string {
	for _, n := range s.nodeCIDRs {
		if n.prefix.Contains(ip) {
			return n.node
		}
	}
	return ""
}
