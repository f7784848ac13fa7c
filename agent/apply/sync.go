package apply

import (
	"context"
	"net/netip"
	"slices"

	"github.com/winproxy/winproxy/agent/addrmap"
	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
)

// syncState is one sync: what it observed and wants, the sync's lookup
// tables, and its result. A sync alternates planning and executing, in
// phases whose plans depend on what the previous phase created: endpoints
// (the source VIP first: nothing else is programmed without it), load
// balancers, then what nothing uses any more. Planning reads the state
// and returns operations; matching (which listed object is which wanted
// one) and the executor are what change it.
type syncState struct {
	a   *Applier
	ctx context.Context
	o   *Observation
	d   *engine.Desired
	r   *Result
	*index

	// strict makes any failure end the sync with errNotDelta (ApplyChanges:
	// a full Apply knows what to do about it).
	strict        bool
	gone          map[hns.ID]bool // listed endpoints deleted this sync
	createdRemote int             // remote endpoints created this sync
	keptRemote    int             // remote endpoints of the agent's a delete failed to remove
	keptListed    int             // listed remote endpoints of the agent's the clean-up keeps
	// unmapped are the keys of the LBs no longer desired, by ID, for
	// counting a failed delete under its kind.
	unmapped map[hns.ID]engine.LBKey
	// recorded is set once the listed load balancers were matched by the
	// ledger and the applier's memory (matchRecorded).
	recorded bool
	// first and firstEPs are the load balancers and remote endpoints the
	// first sync of a start planned before the others (firstPhases).
	first    map[engine.LBKey]bool
	firstEPs map[netip.Addr]bool
	order    order
}

// index is a sync's lookup tables over what HNS listed. The Applier keeps
// one and clears it after each sync, so that a resync of a small node
// reuses its storage instead of allocating (and collecting) maps of every
// endpoint again; a large node's (more than keptIndexSize endpoints) is let
// go, as its full syncs are minutes apart and its maps would hold about
// 10 MB between them at 10k services.
type index struct {
	local map[netip.Addr]string // IP -> local endpoint ID
	// Listed endpoints are referred to by their index in the observation.
	remoteByIP  addrmap.Map[int]            // IP -> remote endpoint (ours preferred)
	ours        []int                       // remote endpoints of ours
	ownLocal    []int                       // local endpoints named as ours: source-VIP ones
	dups        []int                       // remote endpoints of ours holding a local address
	remembered  []bool                      // endpoints whose only IP a.epIDs maps to them
	nRemembered int                         // how many are
	resolved    []bool                      // endpoints a desired one was resolved to
	listedLB    map[hns.ID]hns.LoadBalancer // the load balancers in HNS, as the sync changes them
	claimed     map[hns.ID]bool             // LB IDs mapped to a desired key this sync
	vips        []netip.Addr                // build's scratch
	ids         []string                    // build's scratch
}

func newIndex() *index {
	return &index{local: map[netip.Addr]string{},
		listedLB: map[hns.ID]hns.LoadBalancer{}, claimed: map[hns.ID]bool{}}
}

// keptIndexSize is the most endpoints an index keeps storage for.
const keptIndexSize = 4096

// reset empties the index, keeping its storage (up to keptIndexSize
// endpoints) but no reference into the last observation.
func (x *index) reset() {
	if cap(x.remembered) > keptIndexSize || len(x.listedLB) > keptIndexSize {
		*x = *newIndex()
		return
	}
	clear(x.local)
	x.remoteByIP.Clear()
	x.ours = x.ours[:0]
	x.ownLocal = x.ownLocal[:0]
	x.dups = x.dups[:0]
	x.nRemembered = 0
	clear(x.remembered[:cap(x.remembered)])
	clear(x.resolved[:cap(x.resolved)])
	clear(x.listedLB)
	clear(x.claimed)
	clear(x.ids[:cap(x.ids)])
}

// Apply programs d given what o observed. HNS is left as it is when d is
// not programmable; an HNS-not-running answer ends the sync at once.
func (a *Applier) Apply(ctx context.Context, o *Observation, d *engine.Desired) (r Result, _ error) {
	r = Result{Writes: map[Write]int{}, LBsDesired: len(d.LoadBalancers)}
	a.settled = false
	defer a.noteLedger(&r)
	if !d.Effective.Programmable {
		r.Skipped = SkippedBlocked
		r.LBsFailed = r.LBsDesired
		return r, nil
	}
	if a.networkID != "" && !hns.SameID(a.networkID, o.View.Network.ID) {
		// The CNI recreated the network: the endpoints we knew are gone
		// with it. Forget the mappings; the diff below rebuilds.
		clear(a.lbIDs)
		a.epIDs.Clear()
		clear(a.retries)
		a.starting = true
	}
	a.networkID = o.View.Network.ID

	s := &syncState{a: a, ctx: ctx, o: o, d: d, r: &r, index: a.index}
	defer a.index.reset()
	err := s.run()
	r.LBsFailed = r.LBsDesired - r.LBsProgrammed
	a.settled = err == nil && r.Skipped == "" && r.LBsFailed == 0 && len(r.Failures) == 0
	// The first sync of a start is over once it got past the source VIP.
	a.starting = a.starting && (err != nil || r.Skipped != "")
	a.remotes = r.RemoteEndpoints
	return r, err
}

// run is a full sync: every phase planned against everything listed.
func (s *syncState) run() error {
	s.a.pruneRetries(s.d)
	s.indexListed()
	for _, plan := range fullSync {
		ops, err := plan(s)
		if err != nil {
			return err
		}
		if stop, err := s.execute(ops); err != nil || stop {
			return err
		}
	}
	// Endpoints created this sync are not in the observation.
	s.r.RemoteEndpoints = s.keptListed + s.keptRemote + s.createdRemote
	return nil
}

// fullSync is the order of a full sync's phases, each planned once the
// previous one is carried out: the local endpoints (the source VIP first:
// a failure of it ends the sync, since no load balancer is programmed
// without it), the remote endpoints the load balancers' backends need, the
// load balancers, then what nothing uses any more. The planner's tests
// plan through the same list.
var fullSync = slices.Concat([]func(*syncState) ([]op, error){
	func(s *syncState) ([]op, error) { return s.planLocalEndpoints(), nil }},
	firstPhases(), // the first sync of a start: the critical Services first
	[]func(*syncState) ([]op, error){
		func(s *syncState) ([]op, error) { return s.planRemoteEndpoints(s.matchRemoteEndpoints()), nil },
		(*syncState).planLoadBalancerPhase,
		func(s *syncState) ([]op, error) {
			var ops []op
			ops, s.keptListed = s.planCleanup()
			return ops, nil
		},
	})

// indexListed builds the sync's lookup tables over what HNS listed.
func (s *syncState) indexListed() {
	s.indexEndpoints()
	s.forgetUnlisted()
	for _, lb := range s.o.LoadBalancers {
		s.listedLB[hns.IDOf(lb.ID)] = lb
	}
}

// planLoadBalancerPhase maps the listed load balancers to the wanted ones
// and plans what differs; those found as wanted count as programmed.
func (s *syncState) planLoadBalancerPhase() ([]op, error) {
	if err := s.matchLoadBalancers(); err != nil {
		return nil, err
	}
	s.unmapUnwanted()
	ops, programmed := s.planLoadBalancers()
	s.r.LBsProgrammed += programmed
	return ops, nil
}

// pruneRetries drops the backoff of objects no longer desired, so that the
// map does not grow with every failed object ever seen and one that comes
// back starts afresh.
func (a *Applier) pruneRetries(d *engine.Desired) {
	for k := range a.retries {
		var wanted bool
		if k.ep.IsValid() {
			wanted = d.RemoteEndpoints.Has(k.ep) || d.SourceVIPEndpoint != nil && d.SourceVIPEndpoint.IP == k.ep
		} else {
			_, wanted = d.LoadBalancers[k.lb]
		}
		if !wanted {
			delete(a.retries, k)
		}
	}
}

// indexEndpoints classifies the network's endpoints. Ours are recognised by
// their winproxy- name.
func (s *syncState) indexEndpoints() {
	a := s.a
	eps := s.o.View.Endpoints
	s.remembered = slices.Grow(s.remembered[:0], len(eps))[:len(eps)]
	s.resolved = slices.Grow(s.resolved[:0], len(eps))[:len(eps)]
	for i := range eps {
		if !eps[i].Remote {
			for _, ip := range eps[i].IPs {
				s.local[ip] = eps[i].ID
			}
			if hns.HasOwnedName(eps[i]) {
				s.ownLocal = append(s.ownLocal, i)
			}
		}
	}
	for i := range eps {
		ep := &eps[i]
		if !ep.Remote {
			continue
		}
		mine := a.owned.OwnsEndpoint(*ep)
		if mine {
			s.ours = append(s.ours, i)
		}
		if len(ep.IPs) == 1 && a.epIDs.At(ep.IPs[0]) == ep.ID {
			s.remembered[i] = true
			s.nRemembered++
		}
		dup := false
		for _, ip := range ep.IPs {
			if _, isLocal := s.local[ip]; isLocal {
				dup = dup || mine
				continue
			}
			if cur, ok := s.remoteByIP.Get(ip); !ok || (mine && !a.owned.OwnsEndpoint(eps[cur])) {
				s.remoteByIP.Set(ip, i)
			}
		}
		if dup {
			s.dups = append(s.dups, i)
		}
	}
}

// forgetUnlisted forgets the endpoints we knew by IP that are no longer
// listed: they were deleted behind our back (or went with the network).
func (s *syncState) forgetUnlisted() {
	// Each remembered endpoint accounts for a distinct entry of a.epIDs.
	if s.nRemembered == s.a.epIDs.Len() {
		return
	}
	listed := make(map[hns.ID]bool, len(s.o.View.Endpoints))
	for i := range s.o.View.Endpoints {
		listed[hns.IDOf(s.o.View.Endpoints[i].ID)] = true
	}
	for ip, id := range s.a.epIDs.All() {
		if !listed[hns.IDOf(id)] {
			s.a.epIDs.Delete(ip)
			if s.d.RemoteEndpoints.Has(ip) {
				s.r.DriftRepairs.Endpoints++
			}
		}
	}
}

// markGone records that a listed endpoint was deleted this sync.
func (s *syncState) markGone(id string) {
	if s.gone == nil {
		s.gone = map[hns.ID]bool{}
	}
	s.gone[hns.IDOf(id)] = true
}

func (s *syncState) isGone(id string) bool {
	return len(s.gone) > 0 && s.gone[hns.IDOf(id)]
}
