package apply

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
)

// maxDelta is the most load balancers a sync programs one by one from
// engine.Changes; a bigger change (a config rollout, many services at
// once) takes a full Apply, whose cost does not grow with the change.
const maxDelta = 256

// errNotDelta ends a sync that cannot be done from the changes alone: the
// caller runs a full Apply, which knows what to do about it.
var errNotDelta = errors.New("not a change the applier can program on its own")

// ApplyChanges programs only what the engine says changed (engine.Changes),
// from the model of HNS the applier keeps, without reading or diffing
// anything else: the cost of a sync follows the change, not the cluster.
// False means the sync could not be done that way and the caller must run
// a full Apply (from Recall or Observe): the last full Apply left failures
// or retries, the node context changed, the change is large, or a write
// failed or met something unexpected (a frontend a foreign load balancer
// holds, an object gone). What was written before that is kept, and the
// full Apply starts from it.
func (a *Applier) ApplyChanges(ctx context.Context, d *engine.Desired, ch engine.Changes) (Result, bool, error) {
	r := Result{Writes: map[Write]int{}, LBsDesired: len(d.LoadBalancers)}
	// Whatever happens next, what changed is programmed only once a full
	// Apply has run, unless this one succeeds.
	settled := a.settled
	a.settled = false
	if !settled || ch.Everything || !d.Effective.Programmable || len(a.retries) > 0 || len(ch.LoadBalancers) > maxDelta {
		return r, false, nil
	}
	network, local, ok := a.model.localView()
	if !ok || !strings.EqualFold(network.ID, a.networkID) {
		return r, false, nil
	}
	o := &Observation{Version: *a.version}
	o.View = engine.HNSView{Found: true, Network: network, Capabilities: hns.CapabilitiesFor(*a.version)}
	s := &syncState{a: a, ctx: ctx, o: o, d: d, r: &r, index: newIndex()}
	for _, ep := range local {
		for _, ip := range ep.IPs {
			s.local[ip] = ep.ID
		}
	}
	err := s.delta(ch)
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

// delta is ApplyChanges' sync, in the order of a full one: endpoints the
// changed load balancers need, then the load balancers (unwanted ones
// first, freeing their frontends), then the endpoints nothing wants.
func (s *syncState) delta(ch engine.Changes) error {
	keys := slices.SortedFunc(slices.Values(ch.LoadBalancers), func(a, b engine.LBKey) int { return a.Compare(b) })
	ips := slices.SortedFunc(slices.Values(ch.RemoteEndpoints), func(a, b netip.Addr) int { return a.Compare(b) })
	for _, ip := range ips {
		if err := s.deltaEndpoint(ip); err != nil {
			return err
		}
	}
	for _, key := range keys {
		if _, wanted := s.d.LoadBalancers[key]; !wanted {
			if err := s.deltaUnwanted(key); err != nil {
				return err
			}
		}
	}
	for _, key := range keys {
		if lb, wanted := s.d.LoadBalancers[key]; wanted {
			if err := s.deltaLoadBalancer(lb); err != nil {
				return err
			}
		}
	}
	for _, ip := range ips {
		if _, wanted := s.d.RemoteEndpoints[ip]; !wanted {
			if err := s.deltaUnusedEndpoint(ip); err != nil {
				return err
			}
		}
	}
	return nil
}

// deltaEndpoint makes sure a wanted remote endpoint exists as wanted.
func (s *syncState) deltaEndpoint(ip netip.Addr) error {
	want, wanted := s.d.RemoteEndpoints[ip]
	if _, isLocal := s.local[ip]; !wanted || isLocal {
		return nil
	}
	if id, ok := s.a.epIDs[ip]; ok {
		ep, found := s.a.model.endpoint(id)
		switch {
		case !found:
			return errNotDelta // deleted behind the agent's back
		case remoteMatches(ep, want) || !s.a.owned.OwnsEndpoint(ep):
			return nil // a foreign endpoint is used as it is, as in a full sync
		}
		return errNotDelta // ours but stale: the full sync replaces it
	}
	if err := s.replaceRemote(want); err != nil {
		return err
	}
	if len(s.r.Failures) > 0 {
		return errNotDelta
	}
	return nil
}

// deltaUnwanted deletes the load balancer of a key no longer wanted.
func (s *syncState) deltaUnwanted(key engine.LBKey) error {
	id, mapped := s.a.lbIDs[key]
	if !mapped {
		return nil
	}
	cur, found := s.a.model.loadBalancer(id)
	if !found || !s.a.owned.OwnsLoadBalancer(cur) {
		return errNotDelta
	}
	delete(s.a.lbIDs, key)
	if err := s.deleteLB(cur); err != nil {
		return s.deltaFailed(err)
	}
	return nil
}

// deltaLoadBalancer creates or updates one wanted load balancer.
func (s *syncState) deltaLoadBalancer(lb engine.LoadBalancer) error {
	id, mapped := s.a.lbIDs[lb.Key]
	if mapped {
		cur, found := s.a.model.loadBalancer(id)
		if !found {
			return errNotDelta
		}
		s.listedLB[strings.ToUpper(cur.ID)] = cur
		if s.programmed(lb) {
			return nil
		}
	}
	want := detached(s.build(lb))
	if len(want.BackendEndpointIDs) == 0 {
		return errNotDelta
	}
	if err := s.update(lb, want, id, mapped); err != nil {
		return s.deltaFailed(err)
	}
	return nil
}

// deltaUnusedEndpoint deletes a remote endpoint of the agent's that no
// desired endpoint wants any more. Every load balancer that used it was
// changed with it, so none does now.
func (s *syncState) deltaUnusedEndpoint(ip netip.Addr) error {
	id, ok := s.a.epIDs[ip]
	if !ok {
		return nil
	}
	ep, found := s.a.model.endpoint(id)
	if !found {
		return errNotDelta
	}
	delete(s.a.epIDs, ip)
	if !s.a.owned.OwnsEndpoint(ep) {
		return nil
	}
	err := s.a.owned.DeleteEndpoint(s.ctx, ep)
	s.write(WriteEPDelete)
	if err != nil && !hns.IsNotFound(err) {
		return s.deltaFailed(err)
	}
	return nil
}

// deltaFailed hands a failed write to a full Apply, unless it ends the sync.
func (s *syncState) deltaFailed(err error) error {
	if isFatal(err) {
		return err
	}
	return errNotDelta
}
