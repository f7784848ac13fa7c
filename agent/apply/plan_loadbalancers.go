package apply

import (
	"fmt"
	"slices"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
)

// matchLoadBalancers maps desired keys to listed LBs: the remembered ID if
// it is still listed (else that is drift), or, for the others (after a
// restart, for new services), a listed LB with exactly the desired content,
// else one proven the agent's with the same frontend, to be modified.
//
// An identical LB is taken whoever created it, and adopted if it does not
// prove to be the agent's (the ledger lost or lacks it, an earlier version
// recorded it without fingerprint, kube-proxy left it): that changes
// nothing on the data plane, where replacing it because it holds the
// frontend (docs/design/dataplane.md#foreign-load-balancers) would delete
// and recreate the same LB. Any other LB that does not prove to be the
// agent's is foreign, and is replaced only if it blocks a create.
func (s *syncState) matchLoadBalancers() error {
	if err := s.matchRecorded(); err != nil {
		return err
	}
	unmapped := s.unmappedLoadBalancers()
	if len(unmapped) == 0 {
		return nil // the usual resync: no listed LB needs indexing by content
	}
	return s.matchByContent(unmapped)
}

// matchRecorded settles the ledger with the list and keeps the remembered
// IDs still listed and recorded, once a sync: before the sync creates a
// load balancer, which the list does not show.
func (s *syncState) matchRecorded() error {
	if s.recorded {
		return nil
	}
	s.recorded = true
	a := s.a
	adopted, err := a.owned.Settle(s.o.LoadBalancers)
	if err != nil {
		return err
	}
	s.r.Adopted = adopted
	for key, id := range a.lbIDs {
		if _, ok := s.listedLB[hns.IDOf(id)]; ok && a.owned.Ledger.Has(id) {
			s.claimed[hns.IDOf(id)] = true
			continue
		}
		delete(a.lbIDs, key)
		if _, wanted := s.d.LoadBalancers[key]; wanted {
			s.r.DriftRepairs.LoadBalancers++
		}
	}
	return nil
}

// matchByContent maps each of unmapped to an unclaimed listed LB: the
// agent's with the same content, else the agent's with the same frontend,
// else another's with the same content, adopted.
func (s *syncState) matchByContent(unmapped []engine.LoadBalancer) error {
	a := s.a
	ownedByFront := map[hns.Frontend]hns.ID{}
	// content signature -> unclaimed listed IDs, proven the agent's or not
	owned, other := map[string][]hns.ID{}, map[string][]hns.ID{}
	for _, lb := range s.o.LoadBalancers {
		id := hns.IDOf(lb.ID)
		switch {
		case s.claimed[id]:
		case a.owned.OwnsLoadBalancer(lb):
			ownedByFront[frontOf(lb)] = id
			owned[signature(lb)] = append(owned[signature(lb)], id)
		default:
			other[signature(lb)] = append(other[signature(lb)], id)
		}
	}
	for _, lb := range unmapped {
		want := s.build(lb)
		found := s.unclaimedSame(owned[signature(want)], want)
		if id, ok := ownedByFront[frontOf(want)]; found == "" && ok && !s.claimed[id] {
			found = id
		}
		if found == "" {
			if found = s.unclaimedSame(other[signature(want)], want); found != "" {
				if err := a.owned.Adopt(s.listedLB[found]); err != nil {
					return err
				}
				s.r.Adopted++
			}
		}
		if found == "" {
			continue
		}
		a.lbIDs[lb.Key] = s.listedLB[found].ID
		s.claimed[found] = true
	}
	return nil
}

// unclaimedSame returns the first of ids not yet claimed whose LB has
// want's content.
func (s *syncState) unclaimedSame(ids []hns.ID, want hns.LoadBalancer) hns.ID {
	for _, id := range ids {
		if !s.claimed[id] && sameLB(s.listedLB[id], want) {
			return id
		}
	}
	return ""
}

// unmappedLoadBalancers lists in key order the desired LBs that no listed
// LB is mapped to.
func (s *syncState) unmappedLoadBalancers() []engine.LoadBalancer {
	var out []engine.LoadBalancer
	for key, lb := range s.d.LoadBalancers {
		if _, ok := s.a.lbIDs[key]; !ok {
			out = append(out, lb)
		}
	}
	sortLoadBalancers(out)
	return out
}

// unmapUnwanted forgets the keys no longer desired: their LBs are the
// agent's to delete (planLoadBalancers). The sync keeps them in unmapped,
// so that a failed delete is counted under its kind.
func (s *syncState) unmapUnwanted() {
	for key, id := range s.a.lbIDs {
		if _, ok := s.d.LoadBalancers[key]; !ok {
			delete(s.a.lbIDs, key)
			delete(s.claimed, hns.IDOf(id))
			if s.unmapped == nil {
				s.unmapped = map[hns.ID]engine.LBKey{}
			}
			s.unmapped[hns.IDOf(id)] = key
		}
	}
}

// planLoadBalancers deletes the agent's LBs no desired key maps to, first,
// so that frontends they hold are free (a recorded one that no longer
// proves to be the agent's is disowned instead), then creates or updates
// every desired LB that differs from HNS, in key order: most are as
// wanted, in any order, and only the rest are sorted. It returns how many
// are programmed already.
func (s *syncState) planLoadBalancers() ([]op, int) {
	var ops []op
	for i := range s.o.LoadBalancers {
		lb := &s.o.LoadBalancers[i]
		if s.claimed[hns.IDOf(lb.ID)] || !s.a.owned.Ledger.Has(lb.ID) {
			continue
		}
		if s.a.owned.OwnsLoadBalancer(*lb) {
			ops = append(ops, op{kind: opDeleteLB, reason: ReasonLBUnwanted, cur: lb})
		} else {
			ops = append(ops, op{kind: opDisown, reason: ReasonLBNotOwned, cur: lb})
		}
	}
	programmed := 0
	var todo []engine.LoadBalancer
	for _, lb := range s.d.LoadBalancers {
		if s.first[lb.Key] {
			continue // planned by the first sync's phases
		}
		if !s.programmed(lb) {
			todo = append(todo, lb)
			continue
		}
		programmed++
		if _, retried := s.a.retries[lbRetryKey(lb.Key)]; retried {
			settled := lb // not &lb: that would move every iteration's lb to the heap
			ops = append(ops, op{kind: opSettled, reason: ReasonProgrammed, lb: &settled})
		}
	}
	sortLoadBalancers(todo)
	ops = slices.Grow(ops, len(todo))
	noModify := s.a.noModify
	for i := range todo {
		var o op
		o, noModify = s.planLoadBalancer(&todo[i], noModify)
		ops = append(ops, o)
	}
	return ops, programmed
}

// planLoadBalancer brings one LB to what is wanted: modify in place when
// HNS can (and the service did not opt out), else delete and create.
// noModify is whether modifies are given up, as the ops planned before
// this one leave it.
func (s *syncState) planLoadBalancer(lb *engine.LoadBalancer, noModify bool) (op, bool) {
	a := s.a
	o := s.deferIfWaiting(op{kind: opCreateLB, reason: ReasonLBMissing, lb: lb})
	if o.kind == opDefer {
		return o, noModify
	}
	want := detached(s.build(*lb))
	o.want = &want
	if len(want.BackendEndpointIDs) == 0 {
		// Every backend's endpoint failed; leave what is there.
		o.kind, o.reason = opFail, ReasonNoBackendEndpoint
		return o, noModify
	}
	id, mapped := a.lbIDs[lb.Key]
	if !mapped {
		return o, noModify
	}
	cur := s.listedLB[hns.IDOf(id)]
	o.cur = &cur
	if !a.owned.OwnsLoadBalancer(cur) {
		// Changed behind the agent's back: no longer its own. If it still
		// holds the frontend, the create replaces it
		// (docs/design/dataplane.md#foreign-load-balancers).
		o.reason = ReasonLBChangedBehindBack
		return o, noModify
	}
	o.kind, o.reason = opReplaceLB, ReasonLBChanged
	if a.modifyIgnored(lb.Key, cur) {
		// That modify was accepted but not carried out: modifying again
		// would repeat forever.
		o.reason, noModify = ReasonModifyNotCarriedOut, true
	}
	if !noModify && !lb.Recreate && s.o.View.Capabilities.ModifyLoadBalancer {
		o.kind = opModifyLB
	}
	return o, noModify
}

// modifyIgnored reports whether the last modify asked of key's LB differs
// from what HNS holds: HNS 15.4 accepts a modify and keeps the old
// backends (k/k #131466). modified holds the asks of the last full sync
// and of every ApplyChanges since (a full sync swaps it into lastModified
// first): an ApplyChanges must compare the model with its predecessors'
// asks, not with an older one they overtook.
func (a *Applier) modifyIgnored(key engine.LBKey, cur hns.LoadBalancer) bool {
	asked, ok := a.modified[key]
	if !ok {
		asked, ok = a.lastModified[key]
	}
	return ok && !sameLB(cur, asked)
}

// programmed reports whether lb's key is mapped to a listed LB with lb's
// content.
func (s *syncState) programmed(lb engine.LoadBalancer) bool {
	id, mapped := s.a.lbIDs[lb.Key]
	if !mapped {
		return false
	}
	want := s.build(lb)
	return sameLB(s.listedLB[hns.IDOf(id)], want)
}

// build turns a desired LB into HNS's form. A backend without an endpoint
// (its creation failed) is left out, as winkernel does. Every LB is built
// on every sync to be compared, so the result's slices are scratch space,
// valid until the next build: detach it before handing it to HNS.
func (s *syncState) build(lb engine.LoadBalancer) hns.LoadBalancer {
	out := hns.LoadBalancer{
		PortMapping: hns.PortMapping{Protocol: lb.Key.Protocol, InternalPort: lb.InternalPort, ExternalPort: lb.Key.ExternalPort,
			DistributionType: lb.Distribution, Flags: lb.PortMappingFlags},
		Flags:              lb.Flags,
		SourceVIP:          lb.SourceVIP,
		FrontendVIPs:       s.vips[:0],
		BackendEndpointIDs: s.ids[:0],
	}
	if lb.Key.VIP.IsValid() {
		out.FrontendVIPs = append(out.FrontendVIPs, lb.Key.VIP)
	}
	for _, b := range lb.Backends {
		id := b.EndpointID
		if !b.Local {
			if lid, ok := s.local[b.IP]; ok {
				id = lid
			} else {
				id = s.a.epIDs.At(b.IP)
			}
		}
		if id != "" {
			out.BackendEndpointIDs = append(out.BackendEndpointIDs, id)
		}
	}
	s.vips, s.ids = out.FrontendVIPs, out.BackendEndpointIDs
	return out
}

// detached returns lb with slices of its own, nil when empty as a fresh
// build's would be.
func detached(lb hns.LoadBalancer) hns.LoadBalancer {
	lb.FrontendVIPs = cloneOrNil(lb.FrontendVIPs)
	lb.BackendEndpointIDs = cloneOrNil(lb.BackendEndpointIDs)
	return lb
}

func cloneOrNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

func sameLB(a, b hns.LoadBalancer) bool {
	return slices.Equal(a.FrontendVIPs, b.FrontendVIPs) && a.PortMapping == b.PortMapping && a.Flags == b.Flags &&
		a.SourceVIP == b.SourceVIP && hns.SameIDs(a.BackendEndpointIDs, b.BackendEndpointIDs)
}

// frontOf is what makes two LBs the same service's for the applier: the
// frontend HNS refuses twice without the internal port, so that an LB
// whose target port changed is still the one to modify. The engine merges
// its load balancers by the same key (agent/engine/merge.go frontKey), so
// no two wanted ones have it.
func frontOf(lb hns.LoadBalancer) hns.Frontend { return lb.Frontend().WithoutInternalPort() }

// sortLoadBalancers sorts as engine.Desired.SortedLoadBalancers does.
func sortLoadBalancers(lbs []engine.LoadBalancer) {
	slices.SortFunc(lbs, func(a, b engine.LoadBalancer) int { return a.Key.Compare(b.Key) })
}

func signature(lb hns.LoadBalancer) string {
	return fmt.Sprint(lb.FrontendVIPs, lb.PortMapping, lb.Flags, lb.SourceVIP)
}
