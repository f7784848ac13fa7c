package apply

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
)

// errNotDelta ends a sync that cannot be done from the changes alone: the
// caller runs a full Apply, which knows what to do about it.
var errNotDelta = errors.New("not a change the applier can program on its own")

// execute performs ops in order. Every write is counted and recorded with
// its reason; a failed object is recorded and, if it is created or
// updated, retried with backoff on later syncs, and the other ops go on.
// It returns stop when a gate op failed (the rest of the sync is skipped),
// and an error when HNS went away or the caller gave up (isFatal), when
// the ledger cannot be written, or (strict) at the first failure, which
// is then left to the full Apply.
func (s *syncState) execute(ops []op) (stop bool, err error) {
	for i := range ops {
		o := &ops[i]
		err := s.perform(o)
		switch {
		case err == nil:
			if k, ok := o.retryKey(); ok && len(s.a.retries) > 0 {
				delete(s.a.retries, k)
			}
			continue
		case isFatal(err), errors.Is(err, errLedger):
			return false, err
		case s.strict:
			// The full Apply that follows tries again at once, from a list
			// if the write left the model untrusted: no backoff yet.
			return false, errNotDelta
		}
		if o.kind == opDefer {
			s.r.Failures = append(s.r.Failures, Failure{Object: o.object(), Err: err, Deferred: true})
		} else {
			if k, ok := o.retryKey(); ok {
				s.a.backoff(k, err)
			}
			s.fail(o.object(), err)
		}
		if o.gate {
			s.r.Skipped = SkippedSourceVIP
			return true, nil
		}
	}
	return false, nil
}

// errRetryNotDue is a deferral's failure when the object's own error is not known.
var errRetryNotDue = errors.New("waiting for its retry")

// errLedger wraps a failure to record ownership: it ends the sync.
var errLedger = errors.New("ownership ledger")

func (s *syncState) fail(object string, err error) {
	s.r.Failures = append(s.r.Failures, Failure{Object: object, Err: err})
}

// perform carries out one op and what follows from its outcome for the
// sync's tables and the applier's memory.
func (s *syncState) perform(o *op) error {
	switch o.kind {
	case opDefer:
		// A deferral fails even when the retry fell due while the sync ran (planned, then calls
		// took their time): the object was not written. Taken for a success, it ended the retry,
		// and nothing but the periodic full list wrote the object again.
		k, _ := o.retryKey()
		if r := s.a.retries[k]; r != nil && r.err != nil {
			return r.err
		}
		return errRetryNotDue
	case opFail:
		return fmt.Errorf("no backend endpoint could be created")
	case opSettled:
		return nil
	case opUnbindEP:
		s.a.epIDs.Delete(o.ip)
		return nil
	case opDisown:
		return s.disown(*o.cur)
	case opCreateEndpoint, opReplaceEndpoint:
		return s.createEndpoint(o)
	case opDeleteEndpoint:
		return s.deleteEndpoint(o)
	case opDeleteLB:
		if err := s.deleteLB(o.reason, *o.cur); err != nil {
			s.lbFailed(hns.OpDeleteLoadBalancer, s.keyOf(o), err)
			return err
		}
		if o.lb != nil {
			delete(s.a.lbIDs, o.lb.Key)
		}
		return nil
	}
	return s.programLB(o)
}

// call counts one HNS write, and records it if the applier keeps calls.
func (s *syncState) call(c Call) {
	s.r.Writes[writeOf[c.Op]]++
	if s.a.recordCalls {
		s.r.Calls = append(s.r.Calls, c)
	}
}

// createEndpoint creates o.ep, deleting the stale one a replace names
// first. A remote one is remembered by address, a local one (the source
// VIP) is a local endpoint from now on.
func (s *syncState) createEndpoint(o *op) error {
	if o.kind == opReplaceEndpoint {
		if err := s.deleteEndpoint(&op{kind: opDeleteEndpoint, reason: o.reason, ip: o.ip, ep: o.ep}); err != nil {
			return err
		}
	}
	ip := o.ip
	ep, err := s.a.owned.CreateEndpoint(s.ctx, s.o.View.Network.ID, hns.Endpoint{Name: hns.OwnedEndpointName(ip),
		IPs: []netip.Addr{ip}, MAC: o.mac, Remote: o.remote, ProviderAddress: o.pa})
	s.call(Call{Op: hns.OpCreateEndpoint, Reason: o.reason, IP: ip, Err: err})
	if err != nil {
		return err
	}
	if !o.remote {
		s.local[ip] = ep.ID
		return nil
	}
	s.a.epIDs.Set(ip, ep.ID)
	s.createdRemote++
	return nil
}

// deleteEndpoint deletes a listed endpoint; one gone already counts as
// deleted.
func (s *syncState) deleteEndpoint(o *op) error {
	err := s.a.owned.DeleteEndpoint(s.ctx, *o.ep)
	s.call(Call{Op: hns.OpDeleteEndpoint, Reason: o.reason, IP: o.ip, ID: o.ep.ID, Err: err})
	if err != nil && !hns.IsNotFound(err) {
		if o.reason == ReasonEndpointUnused {
			s.keptRemote++
		}
		return err
	}
	s.markGone(o.ep.ID)
	switch o.reason {
	case ReasonEndpointStale:
		s.remoteByIP.Delete(o.ip)
		s.a.epIDs.Delete(o.ip)
	case ReasonEndpointUnused:
		for _, ip := range o.ep.IPs {
			if hns.SameID(s.a.epIDs.At(ip), o.ep.ID) {
				s.a.epIDs.Delete(ip)
			}
		}
	}
	return nil
}

// programLB creates, modifies or replaces o.lb's load balancer.
func (s *syncState) programLB(o *op) error {
	a := s.a
	key := o.lb.Key
	mapped := o.kind == opModifyLB || o.kind == opReplaceLB
	if o.reason == ReasonLBChangedBehindBack {
		if err := s.disown(*o.cur); err != nil {
			return err
		}
		delete(a.lbIDs, key)
	}
	if o.reason == ReasonModifyNotCarriedOut {
		a.noModify = true
	}
	if mapped {
		if _, listed := s.listedLB[hns.IDOf(o.cur.ID)]; !listed {
			// Deleted earlier in this sync, as the blocker of a create.
			delete(a.lbIDs, key)
			mapped = false
		}
	}
	if mapped && o.kind == opModifyLB && !a.noModify {
		got, err := a.owned.ModifyLoadBalancer(s.ctx, *o.cur, *o.want)
		s.call(Call{Op: hns.OpModifyLoadBalancer, Reason: o.reason, Key: key, ID: o.cur.ID, Err: err})
		if err == nil {
			s.listedLB[hns.IDOf(got.ID)] = got
			a.modified[key] = *o.want
			s.r.LBsProgrammed++
			return nil
		}
		if !hns.IsNotImplemented(err) {
			s.lbFailed(hns.OpModifyLoadBalancer, key, err)
			return err
		}
		a.noModify = true // E_NOTIMPL: fall back for the rest of the process
	}
	if mapped {
		if err := s.deleteLB(o.reason, *o.cur); err != nil {
			s.lbFailed(hns.OpDeleteLoadBalancer, key, err)
			return err
		}
		delete(a.lbIDs, key)
	}
	got, err := s.createLB(o.reason, key, *o.want)
	if err != nil {
		s.lbFailed(hns.OpCreateLoadBalancer, key, err)
		return err
	}
	a.lbIDs[key] = got.ID
	s.listedLB[hns.IDOf(got.ID)] = got
	// A new LB: no modify of the key asked before is left to check (an
	// ApplyChanges would compare it with the LB created since).
	delete(a.modified, key)
	delete(a.lastModified, key)
	s.r.LBsProgrammed++
	return nil
}

// lbFailed records a load-balancer write that failed, for winkernel's
// failure counters.
func (s *syncState) lbFailed(op hns.Op, key engine.LBKey, err error) {
	s.r.LBFailures = append(s.r.LBFailures, LBFailure{Op: op, Key: key, Err: err})
}

// keyOf is the key of the load balancer a delete removes: the wanted one's,
// the one it was mapped to until this sync, or only its family.
func (s *syncState) keyOf(o *op) engine.LBKey {
	if o.lb != nil {
		return o.lb.Key
	}
	if key, ok := s.unmapped[hns.IDOf(o.cur.ID)]; ok {
		return key
	}
	if o.cur.IsIPv6() {
		return engine.LBKey{Family: engine.FamilyIPv6}
	}
	return engine.LBKey{Family: engine.FamilyIPv4}
}

func (s *syncState) deleteLB(reason Reason, lb hns.LoadBalancer) error {
	err := s.a.owned.DeleteLoadBalancer(s.ctx, lb)
	s.call(Call{Op: hns.OpDeleteLoadBalancer, Reason: reason, ID: lb.ID, Err: err})
	if err != nil && !hns.IsNotFound(err) {
		return err
	}
	delete(s.listedLB, hns.IDOf(lb.ID))
	return nil
}

// disown gives up a recorded LB that does not prove to be the agent's: it
// was changed behind the agent's back (so it is not what the agent wrote),
// or recorded without fingerprint by an earlier version and found identical
// to nothing desired. Its entry is dropped and it is reported; the agent
// leaves it alone from then on, unless it blocks a frontend
// (docs/design/dataplane.md#foreign-load-balancers).
func (s *syncState) disown(lb hns.LoadBalancer) error {
	if err := s.a.owned.Disown(lb.ID); err != nil {
		return fmt.Errorf("%w: %w", errLedger, err)
	}
	s.r.Disowned = append(s.r.Disowned, lb.String())
	return nil
}

// createLB creates an LB. On "port exists", like winkernel
// (docs/design/dataplane.md#foreign-load-balancers), if exactly one listed
// LB has the same frontend it is deleted — even a foreign one — and the
// create made again; the replacement is reported.
func (s *syncState) createLB(reason Reason, key engine.LBKey, want hns.LoadBalancer) (hns.LoadBalancer, error) {
	got, err := s.a.owned.CreateLoadBalancer(s.ctx, want)
	s.call(Call{Op: hns.OpCreateLoadBalancer, Reason: reason, Key: key, Err: err})
	if err == nil || !hns.IsPortExists(err) {
		return got, err
	}
	var blockers []hns.LoadBalancer
	for _, lb := range s.listedLB {
		if lb.Frontend() == want.Frontend() {
			blockers = append(blockers, lb)
		}
	}
	if len(blockers) != 1 {
		return got, err
	}
	b := blockers[0]
	owned := s.a.owned.OwnsLoadBalancer(b)
	var derr error
	if owned {
		derr = s.a.owned.DeleteLoadBalancer(s.ctx, b)
	} else {
		derr = s.a.raw.DeleteLoadBalancer(s.ctx, b.ID)
	}
	s.call(Call{Op: hns.OpDeleteLoadBalancer, Reason: ReasonFrontendTaken, ID: b.ID, Err: derr})
	if derr != nil && !hns.IsNotFound(derr) {
		return got, err
	}
	delete(s.listedLB, hns.IDOf(b.ID))
	if !owned {
		s.r.ForeignReplaced = append(s.r.ForeignReplaced, fmt.Sprintf("%s (%s)", b.Frontend(), b.ID))
	}
	got, err = s.a.owned.CreateLoadBalancer(s.ctx, want)
	s.call(Call{Op: hns.OpCreateLoadBalancer, Reason: reason, Key: key, Err: err})
	return got, err
}
