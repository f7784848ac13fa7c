// Package nodeinfo reads the facts about a Node that the controller and the agent both use: its
// pod CIDRs, its InternalIPs, and whether an update changed what either of them reads. One home
// for each, so the controller's resolution, the engine, the daemon and plan agree.
package nodeinfo

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// PodCIDRs are the node's pod CIDRs as the Node lists them: spec.podCIDRs, or spec.podCIDR on an
// object that has only the older field. They are not parsed; nil for a nil node.
func PodCIDRs(n *corev1.Node) []string {
	if n == nil {
		return nil
	}
	if len(n.Spec.PodCIDRs) > 0 {
		return n.Spec.PodCIDRs
	}
	if n.Spec.PodCIDR != "" {
		return []string{n.Spec.PodCIDR}
	}
	return nil
}

// InternalIPs are the addresses of the node's InternalIP entries in the Node's order, not parsed;
// nil for a nil node.
func InternalIPs(n *corev1.Node) []string {
	if n == nil {
		return nil
	}
	var out []string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			out = append(out, a.Address)
		}
	}
	return out
}

// IPs are the node's addresses in the agent's order of preference: the resolved config's node IPs
// (configured), then the Node's InternalIPs, IPv4 before IPv6 and otherwise in that order;
// unparsable ones are left out. The agent looks up the host MAC for them in this order.
func IPs(configured []string, n *corev1.Node) []netip.Addr {
	var ips []netip.Addr
	for _, c := range append(slices.Clone(configured), InternalIPs(n)...) {
		if ip, err := netip.ParseAddr(c); err == nil {
			ips = append(ips, ip)
		}
	}
	slices.SortStableFunc(ips, func(x, y netip.Addr) int {
		switch {
		case x.Is4() == y.Is4():
			return 0
		case x.Is4():
			return -1
		}
		return 1
	})
	return ips
}

// AgentInputsChanged reports whether an update of a Node changed what the agent's engine reads of
// it: its labels (topology), pod CIDRs or addresses. Node heartbeats change none of them.
func AgentInputsChanged(o, n *corev1.Node) bool {
	return !equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
		!equality.Semantic.DeepEqual(o.Spec.PodCIDRs, n.Spec.PodCIDRs) || o.Spec.PodCIDR != n.Spec.PodCIDR ||
		!equality.Semantic.DeepEqual(o.Status.Addresses, n.Status.Addresses)
}

// ControllerInputsChanged reports whether an update of a Node changed what the controller reads of
// it to select it and resolve its config: what the agent reads, its annotations (a source VIP)
// and its kubelet version (feature gates).
func ControllerInputsChanged(o, n *corev1.Node) bool {
	return AgentInputsChanged(o, n) ||
		!equality.Semantic.DeepEqual(o.Annotations, n.Annotations) ||
		o.Status.NodeInfo.KubeletVersion != n.Status.NodeInfo.KubeletVersion
}
