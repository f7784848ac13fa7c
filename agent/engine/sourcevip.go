package engine

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// sourceVIPCondition is SourceVIPReady (docs/design/dataplane.md#source-vip):
// overlay needs the node IP, the host MAC, a source VIP of the node's family
// and a local endpoint holding it; L2Bridge never uses one (LBs get an empty
// SourceVIP even when one is configured).
func (c *nodeContext) sourceVIPCondition(cfg *v1alpha1.ResolvedProxyConfig, v *HNSView, primary v1alpha1.IPFamily) {
	e := &c.effective
	e.SourceVIP.Origin = v1alpha1.SourceVIPOriginNone
	if !c.overlay {
		e.SourceVIPReady = Status{True: true, Reason: v1alpha1.ReasonNotRequired, Message: "the network is not overlay: HNS picks the source address"}
		return
	}
	c.overlayPrerequisites(primary)
	sv := cfg.SourceVIP
	if sv == nil {
		c.sourceVIPFailed(v1alpha1.ReasonSourceVIPUnavailable, "the network is overlay but the config has no sourceVIP")
		return
	}
	ip, ok := c.sourceVIPAddress(sv, v, primary)
	if !ok {
		return
	}
	e.SourceVIP.Address = ip.String()
	c.sourceVIP = ip
	c.sourceVIPHolder(sv, v, ip)
}

// overlayPrerequisites blocks overlay programming without the node's IP
// (the provider address of service-VIP and external endpoints) or the host
// MAC (of the source-VIP and service-VIP endpoints).
func (c *nodeContext) overlayPrerequisites(primary v1alpha1.IPFamily) {
	if !c.nodeIP[familyIndex(primary)].IsValid() {
		c.problems = append(c.problems, Problem{Reason: v1alpha1.ReasonNodeIPUnknown, Message: "overlay needs the node's IP (spec.proxy.nodeIPs or the Node's InternalIP)"})
		c.block(v1alpha1.ReasonNodeIPUnknown, "the node's IP is unknown")
	}
	if c.hostMAC == "" {
		c.problems = append(c.problems, Problem{Reason: v1alpha1.ReasonHostMACUnknown, Message: "overlay needs the MAC of the interface holding the node IP"})
		c.block(v1alpha1.ReasonHostMACUnknown, "could not find the host MAC address for the node IP")
	}
}

// sourceVIPAddress is the source VIP the config's strategy gives: the
// address of a named HNS endpoint (e.g. Calico's), or a given address
// (static, or reserved by the controller for the agent to create).
func (c *nodeContext) sourceVIPAddress(sv *v1alpha1.ResolvedSourceVIP, v *HNSView, primary v1alpha1.IPFamily) (netip.Addr, bool) {
	e := &c.effective
	var ip netip.Addr
	switch sv.Strategy {
	case v1alpha1.SourceVIPStrategyEndpoint:
		e.SourceVIP.Origin = v1alpha1.SourceVIPOriginEndpoint
		ep, ok := endpointByName(v.Endpoints, sv.EndpointName)
		if !ok {
			c.sourceVIPFailed(v1alpha1.ReasonSourceVIPEndpointMissing, fmt.Sprintf("no HNS endpoint is named %q yet; overlay load balancers are not programmed", sv.EndpointName))
			return netip.Addr{}, false
		}
		for _, a := range ep.IPs {
			if familyOf(a) == primary {
				ip = a
				break
			}
		}
		if !ip.IsValid() {
			c.sourceVIPFailed(v1alpha1.ReasonSourceVIPUnavailable, fmt.Sprintf("HNS endpoint %q has no %s address", sv.EndpointName, primary))
			return netip.Addr{}, false
		}
	case v1alpha1.SourceVIPStrategyStatic, v1alpha1.SourceVIPStrategyCreate:
		e.SourceVIP.Origin = v1alpha1.SourceVIPOriginStatic
		if sv.Strategy == v1alpha1.SourceVIPStrategyCreate {
			e.SourceVIP.Origin = v1alpha1.SourceVIPOriginCreate
		}
		a, err := netip.ParseAddr(sv.Address)
		if err != nil {
			c.sourceVIPFailed(v1alpha1.ReasonSourceVIPUnavailable, fmt.Sprintf("sourceVIP.address %q is not an IP address", sv.Address))
			return netip.Addr{}, false
		}
		ip = a.Unmap()
	default:
		c.sourceVIPFailed(v1alpha1.ReasonSourceVIPUnavailable, fmt.Sprintf("unknown sourceVIP strategy %q", sv.Strategy))
		return netip.Addr{}, false
	}
	if familyOf(ip) != primary {
		// winkernel only logs this (its start-up check of the source VIP's
		// family) and then fails every LB; saying so and leaving HNS alone
		// is kinder.
		c.sourceVIPFailed(v1alpha1.ReasonSourceVIPUnavailable, fmt.Sprintf("source VIP %s is not %s, the node's family", ip, primary))
		return netip.Addr{}, false
	}
	return ip, true
}

// sourceVIPHolder checks the endpoint holding the source VIP: one that
// holds it is used; none means the agent creates it (winkernel creates it
// at every sync when it is missing). A pod holding an address the agent is
// to create, or a given (Static) one, is refused: taking a pod's IP breaks
// its traffic (k/k #100962), and only the node sees its pods' endpoints,
// also those of pods the API has no object for yet.
func (c *nodeContext) sourceVIPHolder(sv *v1alpha1.ResolvedSourceVIP, v *HNSView, ip netip.Addr) {
	e := &c.effective
	holder, held := holderOf(v.Endpoints, ip)
	if pod, ok := podHolding(sv.Strategy, v, ip); ok {
		c.sourceVIPFailed(v1alpha1.ReasonSourceVIPConflict, fmt.Sprintf("HNS endpoint %s (%q), a pod's, already holds %s; choose an address outside the CNI's IPAM range", pod.ID, pod.Name, ip))
		return
	}
	switch {
	case held:
		e.SourceVIPReady = Status{True: true, Reason: v1alpha1.ReasonSourceVIPFound, Message: fmt.Sprintf("source VIP %s is held by HNS endpoint %s", ip, holder.ID)}
	default:
		c.svipEndpoint = &SourceVIPEndpoint{IP: ip, MAC: c.hostMAC}
		e.SourceVIPReady = Status{True: true, Reason: v1alpha1.ReasonSourceVIPFound, Message: fmt.Sprintf("source VIP %s; its local HNS endpoint is to be created", ip)}
	}
}

// sourceVIPFailed reports SourceVIPReady false, which blocks programming.
func (c *nodeContext) sourceVIPFailed(reason, msg string) {
	c.effective.SourceVIPReady = Status{Reason: reason, Message: msg}
	c.block(reason, msg)
}

// podHolding finds a pod's local endpoint holding ip, for the strategies
// whose address the agent does not read from an endpoint. Create takes its
// address from the pod CIDR: any endpoint it did not create is a pod's.
// Static may name the source-VIP endpoint kube-proxy created before
// (winkernel gives it the host's MAC, a pod's endpoint has a MAC of its
// own) or one the agent created.
func podHolding(strategy v1alpha1.SourceVIPStrategy, v *HNSView, ip netip.Addr) (hns.Endpoint, bool) {
	if strategy != v1alpha1.SourceVIPStrategyCreate && strategy != v1alpha1.SourceVIPStrategyStatic {
		return hns.Endpoint{}, false
	}
	for _, ep := range v.Endpoints {
		if ep.Remote || !ep.HasIP(ip) || hns.HasOwnedName(ep) {
			continue
		}
		if strategy == v1alpha1.SourceVIPStrategyCreate || !sameMAC(ep.MAC, v.HostMAC) {
			return ep, true
		}
	}
	return hns.Endpoint{}, false
}

// sameMAC compares MACs as HNS and Windows write them, in either case,
// with dashes or colons.
func sameMAC(a, b string) bool {
	return a != "" && strings.EqualFold(strings.ReplaceAll(a, ":", "-"), strings.ReplaceAll(b, ":", "-"))
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
