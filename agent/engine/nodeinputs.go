package engine

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/nodeinfo"
)

// nodeInputs are what a node context is derived from, reduced to what the
// derivation reads. An event-triggered sync gives the Incremental the same
// node inputs as the last one nearly always, and comparing them costs
// microseconds where deriving the context again costs a map of every local
// endpoint and an index of every route: a sync's cost must follow the
// change, not the node's pods or the cluster's nodes.
type nodeInputs struct {
	nodeName string
	cfg      v1alpha1.ResolvedProxyConfig
	nodeIP   [2]netip.Addr
	zone     string
	// nodeCIDRs are the other nodes' pod CIDRs, sorted; nodesVersion
	// numbers them in an Incremental (0: not numbered, compared in full).
	nodeCIDRs    []nodeCIDR
	nodesVersion uint64
	// The view, without its endpoints: those are the same when
	// endpointsVersion is and is not zero (HNSView.EndpointsVersion).
	found            bool
	network          hns.Network
	endpointsVersion uint64
	caps             hns.Capabilities
	hostMAC          string
}

func newNodeInputs(nodeName string, cfg *v1alpha1.ResolvedProxyConfig, node *corev1.Node, v *HNSView) nodeInputs {
	in := nodeInputs{nodeName: nodeName, cfg: *cfg, nodeIP: nodeIPs(cfg.NodeIPs, node),
		found: v.Found, network: v.Network, endpointsVersion: v.EndpointsVersion, caps: v.Capabilities, hostMAC: v.HostMAC}
	if node != nil {
		in.zone = node.Labels[corev1.LabelTopologyZone]
	}
	return in
}

// sameEndpoints reports whether both inputs come from views that hold the
// same local endpoints.
func (in nodeInputs) sameEndpoints(o nodeInputs) bool {
	return in.endpointsVersion != 0 && in.endpointsVersion == o.endpointsVersion
}

// same reports whether a context derived from in equals one derived from o.
func (in nodeInputs) same(o nodeInputs) bool {
	return in.sameEndpoints(o) && in.nodeName == o.nodeName && in.nodeIP == o.nodeIP && in.zone == o.zone &&
		in.found == o.found && in.caps == o.caps && in.hostMAC == o.hostMAC &&
		in.network.ID == o.network.ID && in.network.Name == o.network.Name && in.network.Type == o.network.Type &&
		sameRoutes(in.network.RemoteSubnetRoutes, o.network.RemoteSubnetRoutes) &&
		in.sameNodes(o) && sameConfig(&in.cfg, &o.cfg)
}

// sameConfig reports whether two resolved configs say the same. It is asked at every sync, with
// the copy the daemon read from its cache this time against the last one: reflect.DeepEqual did
// the same walk by reflection, 1 % of the CPU of an event at 10k Services, allocating. A field
// added to ResolvedProxyConfig must be compared here (TestSameConfigSeesEveryField fails until it
// is); nil and empty lists and maps say the same.
func sameConfig(a, b *v1alpha1.ResolvedProxyConfig) bool {
	return a.Network == b.Network && a.EnableDSR == b.EnableDSR && a.DualStack == b.DualStack &&
		(a.SourceVIP == nil) == (b.SourceVIP == nil) && (a.SourceVIP == nil || *a.SourceVIP == *b.SourceVIP) &&
		maps.Equal(a.FeatureGates, b.FeatureGates) && a.HealthCheck == b.HealthCheck && a.Sync == b.Sync &&
		slices.Equal(a.NodeIPs, b.NodeIPs) && slices.Equal(a.PodCIDRs, b.PodCIDRs) &&
		a.KubernetesVersion == b.KubernetesVersion && a.TopologyAwareRouting == b.TopologyAwareRouting
}

// sameRoutes compares two networks' routes: a route per node of the
// cluster, and the same slice when the network was not read again.
func sameRoutes(a, b []hns.RemoteSubnetRoute) bool {
	if len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) {
		return true
	}
	return slices.Equal(a, b)
}

func (in nodeInputs) sameNodes(o nodeInputs) bool {
	if in.nodesVersion != 0 && in.nodesVersion == o.nodesVersion {
		return true
	}
	return slices.Equal(in.nodeCIDRs, o.nodeCIDRs)
}

// nodeCIDR is another node's pod CIDR, which explains an overlay backend no
// remote-subnet route covers yet.
type nodeCIDR struct {
	prefix netip.Prefix
	node   string
}

// nodeFor names the other node whose pod CIDR holds ip, if any; the CIDRs
// are sorted, so that the answer does not depend on the order nodes were
// listed in. It is asked only about backends without a provider address,
// so a scan does.
func (c *nodeContext) nodeFor(ip netip.Addr) string {
	for _, n := range c.nodeCIDRs {
		if n.prefix.Contains(ip) {
			return n.node
		}
	}
	return ""
}

// nodeCIDRsOf are the pod CIDRs of nodes other than self, sorted.
func nodeCIDRsOf(nodes []*corev1.Node, self string) []nodeCIDR {
	var out []nodeCIDR
	for _, n := range nodes {
		if n != nil && n.Name != self {
			out = appendPodCIDRs(out, n.Name, parsePodCIDRs(n))
		}
	}
	sortNodeCIDRs(out)
	return out
}

func parsePodCIDRs(n *corev1.Node) []netip.Prefix {
	var out []netip.Prefix
	for _, cidr := range nodeinfo.PodCIDRs(n) {
		if p, err := netip.ParsePrefix(cidr); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

func appendPodCIDRs(out []nodeCIDR, node string, prefixes []netip.Prefix) []nodeCIDR {
	for _, p := range prefixes {
		out = append(out, nodeCIDR{prefix: p, node: node})
	}
	return out
}

func sortNodeCIDRs(cidrs []nodeCIDR) {
	slices.SortFunc(cidrs, func(a, b nodeCIDR) int {
		return cmp.Or(a.prefix.Addr().Compare(b.prefix.Addr()), cmp.Compare(a.prefix.Bits(), b.prefix.Bits()), strings.Compare(a.node, b.node))
	})
}

// clusterNodes are the pod CIDRs of the cluster's nodes as the informers
// report them, kept between syncs: a sync reads no Node list, and its cost
// does not grow with the cluster's nodes.
type clusterNodes struct {
	podCIDRs map[string][]netip.Prefix
	// sorted are the CIDRs of the nodes other than self, valid while not
	// stale; version numbers each new sorted list.
	sorted  []nodeCIDR
	self    string
	stale   bool
	version uint64
}

// set records a node's pod CIDRs; a node whose CIDRs did not change
// changes nothing.
func (n *clusterNodes) set(name string, cidrs []netip.Prefix) {
	if old, ok := n.podCIDRs[name]; ok && slices.Equal(old, cidrs) {
		return
	}
	if n.podCIDRs == nil {
		n.podCIDRs = map[string][]netip.Prefix{}
	}
	n.podCIDRs[name] = cidrs
	n.stale = true
}

func (n *clusterNodes) delete(name string) {
	if _, ok := n.podCIDRs[name]; ok {
		delete(n.podCIDRs, name)
		n.stale = true
	}
}

// others are the sorted CIDRs of the nodes other than self, and their
// version.
func (n *clusterNodes) others(self string) ([]nodeCIDR, uint64) {
	if n.stale || self != n.self || n.version == 0 {
		n.sorted = n.sorted[:0:0] // the last list is still a context's
		for name, cidrs := range n.podCIDRs {
			if name != self {
				n.sorted = appendPodCIDRs(n.sorted, name, cidrs)
			}
		}
		sortNodeCIDRs(n.sorted)
		n.self, n.stale = self, false
		n.version++
	}
	return n.sorted, n.version
}
