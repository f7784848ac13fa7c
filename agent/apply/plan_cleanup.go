package apply

import (
	"net/netip"

	"github.com/winproxy/winproxy/agent/hns"
)

// planCleanup is the last phase, once the load balancers are as wanted:
// the endpoints the agent created that nothing uses any more. It returns
// how many of the agent's listed remote endpoints stay.
func (s *syncState) planCleanup() ([]op, int) {
	ops := s.planStaleSourceVIPs()
	unused, kept := s.planUnusedRemotes()
	return append(ops, unused...), kept
}

// planStaleSourceVIPs deletes the source-VIP endpoints the agent created
// for an address that is no longer the source VIP (the config changed it,
// or now names the CNI's endpoint). One that an LB in HNS still uses,
// because its update failed, is kept until that is fixed.
func (s *syncState) planStaleSourceVIPs() []op {
	var ops []op
	cur, _ := netip.ParseAddr(s.d.Effective.SourceVIP.Address)
	for _, i := range s.ownLocal {
		ep := &s.o.View.Endpoints[i]
		if ep.HasIP(cur) || s.sourceVIPInUse(ep) {
			continue
		}
		ops = append(ops, op{kind: opDeleteEndpoint, reason: ReasonSourceVIPStale, ep: ep})
	}
	return ops
}

// sourceVIPInUse reports whether an LB in HNS has one of ep's addresses as
// its source VIP.
func (s *syncState) sourceVIPInUse(ep *hns.Endpoint) bool {
	for _, lb := range s.listedLB {
		if lb.SourceVIP.IsValid() && ep.HasIP(lb.SourceVIP) {
			return true
		}
	}
	return false
}

// planUnusedRemotes deletes the agent's remote endpoints that no desired
// endpoint wants and no LB in HNS references (one whose update failed
// keeps its endpoints alive until it is fixed).
func (s *syncState) planUnusedRemotes() ([]op, int) {
	var ops []op
	var inUse map[hns.ID]bool // built on first need: most syncs delete nothing
	kept := 0
	for _, i := range s.ours {
		ep := &s.o.View.Endpoints[i]
		if s.isGone(ep.ID) {
			continue
		}
		// One resolved to a desired endpoint this sync is still mapped to it.
		if s.resolved[i] || s.wanted(ep) {
			kept++
			continue
		}
		if inUse == nil {
			inUse = s.backendsInUse()
		}
		if inUse[hns.IDOf(ep.ID)] {
			kept++
			continue
		}
		ops = append(ops, op{kind: opDeleteEndpoint, reason: ReasonEndpointUnused, ep: ep})
	}
	return ops, kept
}

// wanted reports whether a desired remote endpoint is mapped to ep.
func (s *syncState) wanted(ep *hns.Endpoint) bool {
	for _, ip := range ep.IPs {
		if s.d.RemoteEndpoints.Has(ip) && hns.SameID(s.a.epIDs.At(ip), ep.ID) {
			return true
		}
	}
	return false
}

// backendsInUse lists the endpoints that the LBs in HNS reference.
func (s *syncState) backendsInUse() map[hns.ID]bool {
	inUse := map[hns.ID]bool{}
	for _, lb := range s.listedLB {
		for _, id := range lb.BackendEndpointIDs {
			inUse[hns.IDOf(id)] = true
		}
	}
	return inUse
}
