package apply

import (
	"context"
	"fmt"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/ownership"
)

// Removal is what winproxy-agent cleanup did: what it deleted, and what it
// left although the agent may have created it.
type Removal struct {
	// LoadBalancers and Endpoints are how many it deleted.
	LoadBalancers, Endpoints int
	// Unproven are the recorded load balancers that no longer hold what the
	// agent wrote (changed by someone else, or recorded by an earlier
	// version and not proven by a sync since).
	Unproven []string
	// InUse are the agent's endpoints that a load balancer left in place
	// still uses.
	InUse []string
}

// Remove deletes the load balancers and endpoints that prove to be the
// agent's, and nothing else: winproxy-agent cleanup, the explicit way to
// remove what winproxy programmed on a host (a sync never removes all).
// The agent must not be running.
func Remove(ctx context.Context, c hns.Client, owned *ownership.Owned) (Removal, error) {
	var r Removal
	lbs, err := c.ListLoadBalancers(ctx)
	if err != nil {
		return r, err
	}
	// A load balancer created just before the agent was killed is recorded
	// only as an intent: settle those first so that it is removed too.
	if _, err := owned.Settle(lbs); err != nil {
		return r, err
	}
	// Load balancers first: they reference the endpoints.
	ops, inUse := planRemoveLoadBalancers(lbs, owned)
	if err := r.execute(ctx, owned, ops); err != nil {
		return r, err
	}
	// Every network's: the agent's endpoints stay on a network its config
	// switched away from.
	eps, err := c.ListEndpoints(ctx, "")
	if err != nil {
		return r, err
	}
	return r, r.execute(ctx, owned, planRemoveEndpoints(eps, owned, inUse))
}

// planRemoveLoadBalancers deletes the load balancers that prove to be the
// agent's and leaves the recorded ones that do not. It returns the
// endpoints the load balancers it leaves use.
func planRemoveLoadBalancers(lbs []hns.LoadBalancer, owned *ownership.Owned) ([]op, map[hns.ID]bool) {
	var ops []op
	inUse := map[hns.ID]bool{}
	for i := range lbs {
		lb := &lbs[i]
		if owned.OwnsLoadBalancer(*lb) {
			ops = append(ops, op{kind: opDeleteLB, reason: ReasonRemovalRequested, cur: lb})
			continue
		}
		if owned.Ledger.Has(lb.ID) {
			ops = append(ops, op{kind: opLeave, reason: ReasonLBNotOwned, cur: lb})
		}
		for _, id := range lb.BackendEndpointIDs {
			inUse[hns.IDOf(id)] = true
		}
	}
	return ops, inUse
}

// planRemoveEndpoints deletes the agent's endpoints, except those a load
// balancer left in place uses (inUse), which it leaves.
func planRemoveEndpoints(eps []hns.Endpoint, owned *ownership.Owned, inUse map[hns.ID]bool) []op {
	var ops []op
	for i := range eps {
		ep := &eps[i]
		switch {
		case !owned.OwnsEndpoint(*ep):
		case inUse[hns.IDOf(ep.ID)]:
			ops = append(ops, op{kind: opLeave, reason: ReasonEndpointInUse, ep: ep})
		default:
			ops = append(ops, op{kind: opDeleteEndpoint, reason: ReasonRemovalRequested, ep: ep})
		}
	}
	return ops
}

// execute carries out a removal's ops in order; an object already gone
// counts as deleted, and any other failure ends the removal.
func (r *Removal) execute(ctx context.Context, owned *ownership.Owned, ops []op) error {
	for _, o := range ops {
		switch {
		case o.kind == opDeleteLB:
			if err := owned.DeleteLoadBalancer(ctx, *o.cur); err != nil && !hns.IsNotFound(err) {
				return fmt.Errorf("deleting load balancer %s: %w", o.cur.ID, err)
			}
			r.LoadBalancers++
		case o.kind == opDeleteEndpoint:
			if err := owned.DeleteEndpoint(ctx, *o.ep); err != nil && !hns.IsNotFound(err) {
				return fmt.Errorf("deleting endpoint %s: %w", o.ep.ID, err)
			}
			r.Endpoints++
		case o.cur != nil:
			r.Unproven = append(r.Unproven, o.cur.String())
		default:
			r.InUse = append(r.InUse, o.ep.String())
		}
	}
	return nil
}
