package apply

import (
	"context"
	"errors"
	"net/netip"
	"slices"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
)

// ApplyChanges programs only what the engine says changed (engine.Changes),
// from the model of HNS the applier keeps, without reading or diffing
// anything else: the cost of a sync follows the change, not the cluster.
// Whether a sync may do that is the agent's decision (agent/syncmode: the
// last sync settled, no retries pending, the node context unchanged, the
// change small, the view the model's); ApplyChanges only refuses what it
// meets while it programs. False means it did not finish and the caller
// must run a full Apply (from Recall or Observe): a write failed or met
// something the model did not know (a frontend a foreign load balancer
// holds, an object gone). What was written before that is kept, and the
// full Apply starts from it.
func (a *Applier) ApplyChanges(ctx context.Context, d *engine.Desired, ch engine.Changes) (r Result, _ bool, _ error) {
	r = Result{Writes: map[Write]int{}, LBsDesired: len(d.LoadBalancers)}
	defer a.noteLedger(&r)
	// Whatever happens next, what changed is programmed only once a full
	// Apply has run, unless this one succeeds.
	a.settled = false
	network, _, _, localIPs, ok := a.model.localView()
	if !ok || !hns.SameID(network.ID, a.networkID) {
		return r, false, nil
	}
	o := &Observation{Version: *a.version}
	o.View = engine.HNSView{Found: true, Network: network, Capabilities: hns.CapabilitiesFor(*a.version)}
	// The full syncs' index, emptied after each: made anew, its maps cost a kilobyte an event
	// (a listed load balancer is 150 bytes). Its map of the local addresses is the model's, not
	// one made again (a source-VIP endpoint this sync creates goes into both alike), and is put
	// back before the reset, which would empty the model's.
	ix := a.index
	own := ix.local
	ix.local = localIPs
	defer func() {
		ix.local = own
		ix.reset()
	}()
	s := &syncState{a: a, ctx: ctx, o: o, d: d, r: &r, index: ix, strict: true}
	err := s.runChanges(ch)
	switch {
	case errors.Is(err, errNotDelta):
		return r, false, nil
	case err != nil:
		return r, true, err
	}
	a.settled = true
	a.remotes += s.createdRemote - r.Writes[WriteEPDelete]
	r.LBsProgrammed, r.RemoteEndpoints = r.LBsDesired, a.remotes
	return r, true, nil
}

// runChanges is ApplyChanges' sync, in the phases of a full one: endpoints
// the changed load balancers need, then the load balancers (unwanted ones
// first, freeing their frontends), then the endpoints nothing wants. Any
// failure, and anything the model cannot tell, ends it with errNotDelta.
func (s *syncState) runChanges(ch engine.Changes) error {
	keys := slices.SortedFunc(slices.Values(ch.LoadBalancers), func(a, b engine.LBKey) int { return a.Compare(b) })
	ips := slices.SortedFunc(slices.Values(ch.RemoteEndpoints), func(a, b netip.Addr) int { return a.Compare(b) })
	ops, err := s.planChangedEndpoints(ips)
	if err != nil {
		return err
	}
	if _, err := s.execute(ops); err != nil {
		return err
	}
	if ops, err = s.planChangedLoadBalancers(keys); err != nil {
		return err
	}
	if _, err := s.execute(ops); err != nil {
		return err
	}
	if ops, err = s.planChangedUnused(ips); err != nil {
		return err
	}
	_, err = s.execute(ops)
	return err
}

// planChangedEndpoints creates the wanted remote endpoints among ips that
// the applier does not know yet.
func (s *syncState) planChangedEndpoints(ips []netip.Addr) ([]op, error) {
	var ops []op
	for _, ip := range ips {
		want, wanted := s.d.RemoteEndpoints.Get(ip)
		if _, isLocal := s.local[ip]; !wanted || isLocal {
			continue
		}
		id, known := s.a.epIDs.Get(ip)
		if !known {
			ops = s.planRemote(ops, want)
			continue
		}
		ep, found := s.a.model.endpoint(ip, id)
		switch {
		case !found:
			return nil, errNotDelta // deleted behind the agent's back
		case !remoteMatches(ep, want) && s.a.owned.OwnsEndpoint(ep):
			return nil, errNotDelta // ours but stale: the full sync replaces it
		}
		// A foreign endpoint is used as it is, as in a full sync.
	}
	return ops, nil
}

// planChangedLoadBalancers deletes the load balancers of the keys no
// longer wanted, then creates or updates the wanted ones that differ.
func (s *syncState) planChangedLoadBalancers(keys []engine.LBKey) ([]op, error) {
	var ops []op
	for _, key := range keys {
		id, mapped := s.a.lbIDs[key]
		if _, wanted := s.d.LoadBalancers[key]; wanted || !mapped {
			continue
		}
		cur, found := s.a.model.loadBalancer(id)
		if !found || !s.a.owned.OwnsLoadBalancer(cur) {
			return nil, errNotDelta
		}
		ops = append(ops, op{kind: opDeleteLB, reason: ReasonLBUnwanted, lb: &engine.LoadBalancer{Key: key}, cur: &cur})
	}
	noModify := s.a.noModify
	for _, key := range keys {
		lb, wanted := s.d.LoadBalancers[key]
		if !wanted {
			continue
		}
		if id, mapped := s.a.lbIDs[key]; mapped {
			cur, found := s.a.model.loadBalancer(id)
			if !found {
				return nil, errNotDelta
			}
			s.listedLB[hns.IDOf(cur.ID)] = cur
			if s.programmed(lb) {
				continue
			}
		}
		var o op
		o, noModify = s.planLoadBalancer(&lb, noModify)
		if o.kind == opFail {
			return nil, errNotDelta
		}
		ops = append(ops, o)
	}
	return ops, nil
}

// planChangedUnused deletes the agent's remote endpoints among ips that no
// desired endpoint wants any more. Every load balancer that used one was
// changed with it, so none does now.
func (s *syncState) planChangedUnused(ips []netip.Addr) ([]op, error) {
	var ops []op
	for _, ip := range ips {
		if s.d.RemoteEndpoints.Has(ip) {
			continue
		}
		id, ok := s.a.epIDs.Get(ip)
		if !ok {
			continue
		}
		ep, found := s.a.model.endpoint(ip, id)
		if !found {
			return nil, errNotDelta
		}
		if !s.a.owned.OwnsEndpoint(ep) {
			ops = append(ops, op{kind: opUnbindEP, reason: ReasonEndpointUnused, ip: ip})
			continue
		}
		ops = append(ops, op{kind: opDeleteEndpoint, reason: ReasonEndpointUnused, ip: ip, ep: &ep})
	}
	return ops, nil
}
