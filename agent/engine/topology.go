package engine

import (
	"slices"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// Topology-aware routing (docs/topology.md): winkernel ignores EndpointSlice
// hints, kube-proxy on Linux honours them (pkg/proxy/topology.go,
// CategorizeEndpoints). The engine follows kube-proxy's rules for the
// endpoints a service port's cluster-wide load balancers use (the "cluster
// set": ClusterIP, and node-port, external-IP and ingress load balancers
// that do not keep traffic local); load balancers that use local endpoints
// only ignore hints, as kube-proxy's Local policy does.
//
// Like kube-proxy, the engine reads hints only: the EndpointSlice
// controller turns a Service's trafficDistribution or its topology-mode
// annotation into hints, and a Service without hints is not affected.

// topologyMode is which hints a service port's cluster set follows.
type topologyMode uint8

const (
	// topologyNone: every endpoint, as winkernel.
	topologyNone topologyMode = iota
	// topologySameZone: endpoints hinted for this node's zone.
	topologySameZone
	// topologySameNode: endpoints hinted for this node.
	topologySameNode
)

// topologyModeOf decides, as kube-proxy's topologyModeFromHints, which hints
// the cluster set of a port follows, from its endpoints' hints:
//   - with hints for nodes allowed, every ready endpoint hinted for some
//     node and one for this node: same node;
//   - otherwise every ready endpoint hinted for some zone and one for this
//     node's zone (none when the node has no zone label): same zone;
//   - otherwise, and when no endpoint is ready: every endpoint.
//
// readsZone reports whether the answer depends on the node's zone, so that
// the incremental engine recomputes only such services when it changes.
func (c *nodeContext) topologyModeOf(eps []endpoint) (mode topologyMode, readsZone bool) {
	var anyReady, forNode, forZone bool
	allNodeHints, allZoneHints := true, true
	for i := range eps {
		ep := &eps[i]
		if !ep.ready {
			continue
		}
		anyReady = true
		if n := ep.nodeHints(c.nodeHints); len(n) == 0 {
			allNodeHints = false
		} else if !forNode && hintedForNode(n, c.nodeName) {
			forNode = true
		}
		if z := ep.zoneHints(); len(z) == 0 {
			allZoneHints = false
		} else if !forZone && hintedForZone(z, c.zone) {
			forZone = true
		}
		if !allNodeHints && !allZoneHints {
			// Most services: no hints, decided by the first ready endpoint.
			return topologyNone, false
		}
	}
	switch {
	case !anyReady:
		return topologyNone, false
	case allNodeHints && forNode:
		return topologySameNode, false
	case !allZoneHints:
		return topologyNone, false
	case forZone:
		return topologySameZone, true
	}
	return topologyNone, true
}

// inTopology is kube-proxy's availableForTopology: whether the endpoint is
// in the cluster set under mode. There is no fallback here; it happened
// when the mode was chosen.
func (c *nodeContext) inTopology(ep *endpoint, mode topologyMode) bool {
	switch mode {
	case topologySameNode:
		return hintedForNode(ep.nodeHints(c.nodeHints), c.nodeName)
	case topologySameZone:
		return hintedForZone(ep.zoneHints(), c.zone)
	}
	return true
}

// zoneHints are the zones the endpoint is hinted for.
func (ep *endpoint) zoneHints() []discoveryv1.ForZone {
	if ep.hints == nil {
		return nil
	}
	return ep.hints.ForZones
}

// nodeHints are the nodes the endpoint is hinted for; none when such
// hints are not allowed (kube-proxy's endpoint-slice cache drops them
// without the PreferSameTrafficDistribution gate).
func (ep *endpoint) nodeHints(allowed bool) []discoveryv1.ForNode {
	if ep.hints == nil || !allowed {
		return nil
	}
	return ep.hints.ForNodes
}

// hintedForZone and hintedForNode report whether one of the hints names
// the zone or node (an empty name too: kube-proxy compares names as they
// are).
func hintedForZone(hints []discoveryv1.ForZone, zone string) bool {
	return slices.ContainsFunc(hints, func(h discoveryv1.ForZone) bool { return h.Name == zone })
}

func hintedForNode(hints []discoveryv1.ForNode, node string) bool {
	return slices.ContainsFunc(hints, func(h discoveryv1.ForNode) bool { return h.Name == node })
}

// usesClusterSet reports whether one of the port's load balancers uses the
// cluster set (lbKinds: a kind with frontends that is neither local-only
// nor the health check's root). Hints are not consulted otherwise, as
// kube-proxy consults them only for services that use Cluster policy.
func usesClusterSet(p *portPlan) bool {
	for i := range lbKinds {
		k := &lbKinds[i]
		if !k.root && !k.localOnly(p.policy) && len(k.frontends(p)) > 0 {
			return true
		}
	}
	return false
}
