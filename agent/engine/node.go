package engine

import (
	"fmt"
	"net/netip"
	"unique"

	corev1 "k8s.io/api/core/v1"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/featuregate"
	"github.com/winproxy/winproxy/internal/nodeinfo"
)

// shared is the part of the node context every service computation reads.
// When it changes every service is recomputed; it is compared by value.
type shared struct {
	nodeName string
	// node is nodeName's handle, as the slices' endpoints name their nodes (nodeOf).
	node         unique.Handle[string]
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
	root [2]Backend
	// topology: EndpointSlice hints are honoured (topologyAwareRouting);
	// nodeHints: hints for nodes too (the PreferSameTrafficDistribution
	// gate at the node's version).
	topology, nodeHints bool
}

// nodeContext is shared plus what is only reported, and what is compared
// apart from shared because a reflect.DeepEqual of it would cost as much as
// the cluster is large.
type nodeContext struct {
	shared
	// inputs are what the context was derived from: an Incremental whose
	// node inputs did not change keeps its context as it is.
	inputs nodeInputs
	// routes are the network's remote-subnet routes and nodeCIDRs the other
	// nodes' pod CIDRs (both change every service's backends); each is
	// as long as the cluster has nodes.
	routes       []hns.RemoteSubnetRoute
	nodeCIDRs    []nodeCIDR
	effective    Effective
	problems     []Problem
	svipEndpoint *SourceVIPEndpoint
	// rootBackends are the health-check LBs' backends by family, from
	// shared.root, shared by every service's LBs.
	rootBackends [2][]Backend
	// pa resolves overlay backends' provider addresses from shared.routes.
	pa providerAddresses
	// local maps an IP to the local HNS endpoint holding it.
	local map[netip.Addr]string
	// zone is the node's topology.kubernetes.io/zone label. It is not in
	// shared: when it changes, only the services whose topology read it
	// are recomputed.
	zone string
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
// needs, and the node-level part of Effective. Each step below decides one
// thing the node reports (docs/design/dataplane.md#the-node); the first
// step that blocks programming names the reason. What prev, the last
// context (nil for none), derived from the same local endpoints or routes
// is taken over rather than derived again: a node has hundreds of pods and
// a cluster thousands of nodes.
func newNodeContext(in nodeInputs, cfg *v1alpha1.ResolvedProxyConfig, v *HNSView, prev *nodeContext) *nodeContext {
	c := &nodeContext{inputs: in, nodeCIDRs: in.nodeCIDRs}
	if prev != nil && in.sameEndpoints(prev.inputs) {
		c.local = prev.local
	} else {
		c.local = localEndpoints(v.Endpoints)
	}
	c.nodeName, c.node = in.nodeName, nodeOf(in.nodeName)
	c.caps = v.Capabilities
	c.hostMAC = v.HostMAC
	c.programmable = true
	c.nodeIP = in.nodeIP

	c.networkCondition(cfg, v)
	c.overlayRoutes(v, prev)
	c.hnsAPICondition(v)
	primary := c.ipFamilies(cfg)
	c.dsrCondition(cfg)
	c.externalIPs = externalIPsAllowed(cfg)
	c.healthCheckRoot(cfg, v)
	for i, r := range c.root {
		if r.Local {
			c.rootBackends[i] = []Backend{r}
		}
	}
	c.sourceVIPCondition(cfg, v, primary)
	c.effective.Programmable = c.programmable
	c.topology = cfg.TopologyAwareRouting
	// Without the gate kube-proxy ignores hints for nodes (GA and locked on from 1.35).
	c.nodeHints = cfg.FeatureGates[featuregate.PreferSameTrafficDistribution]
	c.zone = in.zone
	return c
}

// localEndpoints maps each IP of a local HNS endpoint (pods, the host's
// root endpoint, the source-VIP endpoint) to the endpoint's ID. Remote
// endpoints are the applier's business.
func localEndpoints(eps []hns.Endpoint) map[netip.Addr]string {
	local := map[netip.Addr]string{}
	for _, ep := range eps {
		if ep.Remote {
			continue
		}
		for _, ip := range ep.IPs {
			// Two local endpoints never share an IP; the first listed wins.
			if _, dup := local[ip]; !dup {
				local[ip] = ep.ID
			}
		}
	}
	return local
}

// nodeIPs are the node's IPs by family: the resolved config's first, then
// the Node's InternalIPs; the first address of a family wins.
func nodeIPs(configured []string, node *corev1.Node) [2]netip.Addr {
	var ips [2]netip.Addr
	firstOfEachFamily(&ips, configured)
	firstOfEachFamily(&ips, nodeinfo.InternalIPs(node))
	return ips
}

// firstOfEachFamily sets each family's entry of ips (by familyIndex) that is still unset to the
// first of texts of that family, unmapped; texts that do not parse are skipped.
func firstOfEachFamily(ips *[2]netip.Addr, texts []string) {
	for _, text := range texts {
		if ip, err := netip.ParseAddr(text); err == nil {
			if i := familyIndex(familyOf(ip)); !ips[i].IsValid() {
				ips[i] = ip.Unmap()
			}
		}
	}
}

// networkCondition is NetworkReady: the HNS network with the configured
// name, of the expected type. Without it nothing is programmed (winkernel
// waits for the network at start-up).
func (c *nodeContext) networkCondition(cfg *v1alpha1.ResolvedProxyConfig, v *HNSView) {
	e := &c.effective
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
		e.NetworkReady = Status{True: true, Reason: v1alpha1.ReasonNetworkFound,
			Message: fmt.Sprintf("HNS network %q (%s) found", cfg.Network.Name, v.Network.Type)}
	}
	if !e.NetworkReady.True {
		c.block(e.NetworkReady.Reason, e.NetworkReady.Message)
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

// overlayRoutes keeps what overlay backends are resolved with: the
// network's remote-subnet routes (their provider addresses), indexed again
// only when they changed since prev.
func (c *nodeContext) overlayRoutes(v *HNSView, prev *nodeContext) {
	c.overlay = v.Found && v.Network.IsOverlay()
	if !c.overlay {
		return
	}
	c.routes = v.Network.RemoteSubnetRoutes
	if prev != nil && prev.overlay && sameRoutes(prev.routes, c.routes) {
		c.pa = prev.pa
		return
	}
	c.pa = newProviderAddresses(c.routes)
}

// hnsAPICondition blocks programming on an HNS without API v2, which
// winkernel cannot run without.
func (c *nodeContext) hnsAPICondition(v *HNSView) {
	if v.Found && !c.caps.APIV2 {
		c.block(v1alpha1.ReasonHNSUnsupported, "HNS API v2 (HNS 9.2, Windows Server 2019) is required")
	}
}

// ipFamilies is DualStackDowngraded: the primary family is the node IP's;
// dual-stack needs L2Bridge and HNS 11.10. It returns the primary family.
func (c *nodeContext) ipFamilies(cfg *v1alpha1.ResolvedProxyConfig) v1alpha1.IPFamily {
	e := &c.effective
	primary := v1alpha1.IPv4
	if !c.nodeIP[0].IsValid() && c.nodeIP[1].IsValid() {
		primary = v1alpha1.IPv6
	}
	c.families = []v1alpha1.IPFamily{primary}
	switch {
	case !cfg.DualStack:
		e.DualStackDowngraded = Status{Reason: v1alpha1.ReasonDualStackNotRequested, Message: "dual-stack is not requested"}
	case c.overlay:
		e.DualStackDowngraded = Status{True: true, Reason: v1alpha1.ReasonOverlayNetwork,
			Message: fmt.Sprintf("overlay networks support one IP family; only %s is proxied", primary)}
	case !c.caps.IPv6DualStack:
		e.DualStackDowngraded = Status{True: true, Reason: v1alpha1.ReasonHNSUnsupported,
			Message: fmt.Sprintf("HNS older than 11.10 has no dual-stack; only %s is proxied", primary)}
	default:
		c.families = []v1alpha1.IPFamily{v1alpha1.IPv4, v1alpha1.IPv6}
		e.DualStackDowngraded = Status{Reason: v1alpha1.ReasonDualStackActive, Message: "IPv4 and IPv6 are proxied"}
	}
	e.IPFamilies = c.families
	return primary
}

// dsrCondition is DSRActive: DSR on ClusterIP LBs is requested by the
// config and possible only with HNS DSR support. The controller already
// checked the WinDSR gate.
func (c *nodeContext) dsrCondition(cfg *v1alpha1.ResolvedProxyConfig) {
	e := &c.effective
	e.DSR.Requested = cfg.EnableDSR
	switch {
	case !cfg.EnableDSR:
		e.DSRActive = Status{Reason: v1alpha1.ReasonDSRNotRequested, Message: "dsr.enabled is false"}
	case !c.caps.DSR:
		e.DSRActive = Status{Reason: v1alpha1.ReasonDSRUnsupported,
			Message: "this host's HNS has no DSR support; ClusterIP load balancers are programmed without DSR"}
	default:
		c.dsrActive = true
		e.DSR.Active = true
		e.DSRActive = Status{True: true, Reason: v1alpha1.ReasonDSREnabled, Message: "ClusterIP load balancers use DSR"}
	}
}

// externalIPsAllowed is the AllowServiceExternalIPs gate (default on).
func externalIPsAllowed(cfg *v1alpha1.ResolvedProxyConfig) bool {
	on, set := cfg.FeatureGates[featuregate.AllowServiceExternalIPs]
	return on || !set
}

// healthCheckRoot finds the host's root endpoint, by name, that
// health-check LBs forward to, and their default port. Without it there
// are no health-check LBs, which is reported as a node problem.
func (c *nodeContext) healthCheckRoot(cfg *v1alpha1.ResolvedProxyConfig, v *HNSView) {
	c.healthPort = v1alpha1.DefaultHealthCheckPort
	if cfg.HealthCheck.Port > 0 {
		c.healthPort = uint16(cfg.HealthCheck.Port)
	}
	if !cfg.HealthCheck.ForwardVIP {
		return
	}
	name := cfg.HealthCheck.RootEndpointName
	if name == "" {
		name = v1alpha1.DefaultRootEndpointName
	}
	ep, ok := endpointByName(v.Endpoints, name)
	if !ok {
		c.problems = append(c.problems, Problem{Reason: v1alpha1.ReasonHealthCheckEndpointMissing,
			Message: fmt.Sprintf("healthCheck.forwardVIP is set but no HNS endpoint is named %q; no health-check load balancers", name)})
		return
	}
	for _, ip := range ep.IPs {
		i := familyIndex(familyOf(ip))
		if !c.root[i].Local {
			c.root[i] = Backend{IP: ip, Local: true, EndpointID: ep.ID}
		}
	}
	for i := range c.root {
		if !c.root[i].Local && ep.ID != "" {
			// An endpoint without an address of this family still
			// forwards the health port to the host (winkernel uses its
			// ID regardless of family).
			c.root[i] = Backend{Local: true, EndpointID: ep.ID}
		}
	}
}

func endpointByName(eps []hns.Endpoint, name string) (hns.Endpoint, bool) {
	for _, ep := range eps {
		if ep.Name == name {
			return ep, true
		}
	}
	return hns.Endpoint{}, false
}

// block makes the node unprogrammable; the first reason is the one
// reported.
func (c *nodeContext) block(reason, msg string) {
	if c.programmable {
		c.programmable = false
		c.effective.Blocked = Cause{Reason: reason, Message: msg}
	}
}
