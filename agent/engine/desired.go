package engine

import (
	"maps"
	"slices"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

// Desired is the HNS state a node should have, and what is in effect.
//
// A Desired is read-only. One returned by an Incremental shares its maps and
// is valid until the Incremental is changed again; its RemoteEndpoints are
// read from the Incremental's state when asked, so a SetNode changes them at
// once.
type Desired struct {
	LoadBalancers   map[LBKey]LoadBalancer
	RemoteEndpoints RemoteEndpointSet
	// SourceVIPEndpoint is the overlay source-VIP endpoint to create; nil
	// when none is needed or one already holds the address.
	SourceVIPEndpoint *SourceVIPEndpoint
	Effective         Effective

	svcProblems map[string][]Problem
	// reasons count svcProblems by reason, so that asking whether one is
	// there costs no scan of every service's.
	reasons      map[string]int
	conflicts    map[LBKey]Problem
	nodeProblems []Problem
}

// setProblems sets a service's problems, nil for none.
func (d *Desired) setProblems(service string, ps []Problem) {
	for _, p := range d.svcProblems[service] {
		if d.reasons[p.Reason]--; d.reasons[p.Reason] == 0 {
			delete(d.reasons, p.Reason)
		}
	}
	if len(ps) == 0 {
		delete(d.svcProblems, service)
		return
	}
	d.svcProblems[service] = slices.Clone(ps)
	for _, p := range ps {
		d.reasons[p.Reason]++
	}
}

// has reports whether a service or the node has a problem of reason.
func (d *Desired) has(reason string) bool {
	return d.reasons[reason] > 0 || slices.ContainsFunc(d.nodeProblems, func(p Problem) bool { return p.Reason == reason })
}

// SortedLoadBalancers lists the load balancers in key order.
func (d *Desired) SortedLoadBalancers() []LoadBalancer {
	out := slices.Collect(maps.Values(d.LoadBalancers))
	slices.SortFunc(out, func(a, b LoadBalancer) int { return a.Key.Compare(b.Key) })
	return out
}

// SortedRemoteEndpoints lists the remote endpoints by IP.
func (d *Desired) SortedRemoteEndpoints() []RemoteEndpoint {
	out := make([]RemoteEndpoint, 0, d.RemoteEndpoints.Len())
	for _, re := range d.RemoteEndpoints.All() {
		out = append(out, re)
	}
	slices.SortFunc(out, func(a, b RemoteEndpoint) int { return a.IP.Compare(b.IP) })
	return out
}

// Problems lists node and service problems, sorted.
func (d *Desired) Problems() []Problem {
	out := slices.Clone(d.nodeProblems)
	for _, ps := range d.svcProblems {
		out = append(out, ps...)
	}
	for _, p := range d.conflicts {
		out = append(out, p)
	}
	sortProblems(out)
	return out
}

// MissesLocalEndpoint reports whether an endpoint on this node had no HNS endpoint in the view
// (LocalEndpointNotFound): the CNI creates those, so only a list shows a new one.
func (d *Desired) MissesLocalEndpoint() bool { return d.has(v1alpha1.ReasonLocalEndpointNotFound) }

// MissesRoute reports whether a backend in another node's pod CIDR had no remote-subnet route in
// the view's network (NoRemoteSubnetRoute): the CNI adds those, so a network read again may show it.
func (d *Desired) MissesRoute() bool { return d.has(v1alpha1.ReasonNoRemoteSubnetRoute) }
