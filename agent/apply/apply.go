package apply

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
)

// Write is a kind of HNS write, for counters.
type Write string

const (
	WriteLBCreate Write = "lb-create"
	WriteLBModify Write = "lb-modify"
	WriteLBDelete Write = "lb-delete"
	WriteEPCreate Write = "ep-create"
	WriteEPDelete Write = "ep-delete"
)

// Reasons a sync applied nothing.
const (
	SkippedBlocked   = "Blocked" // the Desired is not programmable; see its Effective.Blocked
	SkippedSourceVIP = "SourceVIPEndpointFailed"
)

// Failure is one object that could not be programmed this sync.
type Failure struct {
	Object string
	Err    error
	// Deferred is true when no call was made because the object's retry is
	// not due yet.
	Deferred bool
}

// Result says what a sync did, for status and metrics.
type Result struct {
	// Skipped is set when the sync applied nothing (HNS left as it was).
	Skipped         string
	LBsDesired      int
	LBsProgrammed   int
	LBsFailed       int
	RemoteEndpoints int
	Writes          map[Write]int
	// DriftRepairs counts objects found deleted behind the agent's back and
	// recreated, by kind.
	DriftRepairs DriftRepairs
	// Adopted counts LBs taken over without a call: unrecorded ones proven
	// the agent's by a create intent (a kill came between create and ledger
	// write), and ones identical to a desired LB that did not prove to be
	// the agent's (the ledger lost or lacking them, a previous proxy's).
	Adopted int
	// Disowned lists recorded LBs that no longer prove to be the agent's
	// (changed behind its back, or recorded without fingerprint by an
	// earlier version and identical to nothing desired): left alone.
	Disowned []string
	// ForeignReplaced lists the frontends of foreign LBs deleted because
	// they blocked a create (docs/design/dataplane.md#foreign-load-balancers).
	ForeignReplaced []string
	Failures        []Failure
}

// DriftRepairs counts objects restored after they went missing, by kind:
// an endpoint's repair also re-points the LBs using it, which are not
// counted again.
type DriftRepairs struct {
	LoadBalancers, Endpoints int
}

// Total is the number of objects restored.
func (d DriftRepairs) Total() int { return d.LoadBalancers + d.Endpoints }

// WriteCount is the total number of HNS writes.
func (r Result) WriteCount() int {
	n := 0
	for _, c := range r.Writes {
		n += c
	}
	return n
}

type syncState struct {
	a   *Applier
	ctx context.Context
	o   *Observation
	d   *engine.Desired
	r   *Result
	*index

	gone          map[string]bool // upper-case IDs of listed endpoints deleted this sync
	createdRemote int             // remote endpoints created this sync
}

// index is a sync's lookup tables over what HNS listed. The Applier keeps
// one and clears it after each sync, so that a resync reuses its storage
// instead of allocating (and collecting) maps of every endpoint again.
type index struct {
	local map[netip.Addr]string // IP -> local endpoint ID
	// Listed endpoints are referred to by their index in the observation.
	remoteByIP map[netip.Addr]int          // IP -> remote endpoint (ours preferred)
	ours       []int                       // remote endpoints of ours
	ownLocal   []int                       // local endpoints named as ours: source-VIP ones
	remembered []bool                      // endpoints whose only IP a.epIDs maps to them
	resolved   []bool                      // endpoints a desired one was resolved to
	listedLB   map[string]hns.LoadBalancer // ID -> LB
	claimed    map[string]bool             // LB IDs mapped to a desired key this sync
	vips       []netip.Addr                // build's scratch
	ids        []string                    // build's scratch
}

func newIndex() *index {
	return &index{local: map[netip.Addr]string{}, remoteByIP: map[netip.Addr]int{},
		listedLB: map[string]hns.LoadBalancer{}, claimed: map[string]bool{}}
}

// reset empties the index, keeping its storage but no reference into the
// last observation.
func (x *index) reset() {
	clear(x.local)
	clear(x.remoteByIP)
	x.ours = x.ours[:0]
	x.ownLocal = x.ownLocal[:0]
	clear(x.remembered[:cap(x.remembered)])
	clear(x.resolved[:cap(x.resolved)])
	clear(x.listedLB)
	clear(x.claimed)
	clear(x.ids[:cap(x.ids)])
}

// Apply programs d given what o observed. HNS is left as it is when d is
// not programmable; an HNS-not-running answer ends the sync at once.
func (a *Applier) Apply(ctx context.Context, o *Observation, d *engine.Desired) (Result, error) {
	r := Result{Writes: map[Write]int{}, LBsDesired: len(d.LoadBalancers)}
	a.settled = false
	if !d.Effective.Programmable {
		r.Skipped = SkippedBlocked
		r.LBsFailed = r.LBsDesired
		return r, nil
	}
	if a.networkID != "" && !strings.EqualFold(a.networkID, o.View.Network.ID) {
		// The CNI recreated the network: the endpoints we knew are gone
		// with it. Forget the mappings; the diff below rebuilds.
		clear(a.lbIDs)
		clear(a.epIDs)
		clear(a.retries)
	}
	a.networkID = o.View.Network.ID

	s := &syncState{a: a, ctx: ctx, o: o, d: d, r: &r, index: a.index}
	defer a.index.reset()
	err := s.run()
	r.LBsFailed = r.LBsDesired - r.LBsProgrammed
	a.settled = err == nil && r.Skipped == "" && r.LBsFailed == 0 && len(r.Failures) == 0
	a.remotes = r.RemoteEndpoints
	return r, err
}

func (s *syncState) run() error {
	s.pruneRetries()
	if err := s.indexEndpoints(); err != nil {
		return err
	}
	for _, lb := range s.o.LoadBalancers {
		s.listedLB[strings.ToUpper(lb.ID)] = lb
	}
	if err := s.ensureSourceVIP(); err != nil {
		return err
	}
	if s.r.Skipped != "" {
		return nil
	}
	if err := s.ensureRemoteEndpoints(); err != nil {
		return err
	}
	if err := s.matchLoadBalancers(); err != nil {
		return err
	}
	if err := s.deleteUnwantedLoadBalancers(); err != nil {
		return err
	}
	if err := s.programLoadBalancers(); err != nil {
		return err
	}
	if err := s.deleteStaleSourceVIPEndpoints(); err != nil {
		return err
	}
	return s.deleteUnusedRemoteEndpoints()
}

// pruneRetries drops the backoff of objects no longer desired, so that the
// map does not grow with every failed object ever seen and one that comes
// back starts afresh.
func (s *syncState) pruneRetries() {
	for k := range s.a.retries {
		var wanted bool
		if k.ep.IsValid() {
			_, wanted = s.d.RemoteEndpoints[k.ep]
			wanted = wanted || s.d.SourceVIPEndpoint != nil && s.d.SourceVIPEndpoint.IP == k.ep
		} else {
			_, wanted = s.d.LoadBalancers[k.lb]
		}
		if !wanted {
			delete(s.a.retries, k)
		}
	}
}

func (s *syncState) write(w Write) { s.r.Writes[w]++ }

func (s *syncState) fail(object string, err error) {
	s.r.Failures = append(s.r.Failures, Failure{Object: object, Err: err})
}

// indexEndpoints classifies the network's endpoints. Ours are recognised by
// their winproxy- name. A remote endpoint of ours that duplicates a local
// endpoint's IP (the WS2019/2022 quirk) is deleted; foreign ones are left.
func (s *syncState) indexEndpoints() error {
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
	var dups []*hns.Endpoint
	remembered := 0
	for i := range eps {
		ep := &eps[i]
		if !ep.Remote {
			continue
		}
		mine := a.owned.OwnsEndpoint(*ep)
		if mine {
			s.ours = append(s.ours, i)
		}
		if len(ep.IPs) == 1 && a.epIDs[ep.IPs[0]] == ep.ID {
			s.remembered[i] = true
			remembered++
		}
		for _, ip := range ep.IPs {
			if _, isLocal := s.local[ip]; isLocal {
				if mine {
					dups = append(dups, ep)
				}
				continue
			}
			if cur, ok := s.remoteByIP[ip]; !ok || (mine && !a.owned.OwnsEndpoint(eps[cur])) {
				s.remoteByIP[ip] = i
			}
		}
	}
	// Each remembered endpoint accounts for a distinct entry of a.epIDs.
	if remembered < len(a.epIDs) {
		s.forgetUnlisted()
	}
	for _, ep := range dups {
		if err := a.owned.DeleteEndpoint(s.ctx, *ep); err != nil && !hns.IsNotFound(err) {
			if isFatal(err) {
				return err
			}
			s.fail("endpoint "+ep.ID, err)
			continue
		}
		s.write(WriteEPDelete)
		s.markGone(ep.ID)
	}
	return nil
}

// forgetUnlisted forgets the endpoints we knew by IP that are no longer
// listed: they were deleted behind our back (or went with the network).
func (s *syncState) forgetUnlisted() {
	a := s.a
	listed := make(map[string]bool, len(s.o.View.Endpoints))
	for i := range s.o.View.Endpoints {
		listed[strings.ToUpper(s.o.View.Endpoints[i].ID)] = true
	}
	for ip, id := range a.epIDs {
		if !listed[strings.ToUpper(id)] {
			delete(a.epIDs, ip)
			if _, wanted := s.d.RemoteEndpoints[ip]; wanted {
				s.r.DriftRepairs.Endpoints++
			}
		}
	}
}

// markGone records that a listed endpoint was deleted this sync.
func (s *syncState) markGone(id string) {
	if s.gone == nil {
		s.gone = map[string]bool{}
	}
	s.gone[strings.ToUpper(id)] = true
}

func (s *syncState) isGone(id string) bool {
	return len(s.gone) > 0 && s.gone[strings.ToUpper(id)]
}

// ensureSourceVIP creates the overlay source-VIP endpoint when the engine
// asks for it. Failing that, no load balancer is programmed this sync
// (docs/design/dataplane.md#the-source-vip-endpoint), and HNS is otherwise
// left as it is.
func (s *syncState) ensureSourceVIP() error {
	want := s.d.SourceVIPEndpoint
	if want == nil {
		return nil
	}
	if _, ok := s.local[want.IP]; ok {
		return nil
	}
	key := epRetryKey(want.IP)
	if err, wait := s.a.waiting(key); wait {
		s.r.Failures = append(s.r.Failures, Failure{Object: "source-VIP endpoint " + want.IP.String(), Err: err, Deferred: true})
		s.r.Skipped = SkippedSourceVIP
		return nil
	}
	ep, err := s.a.owned.CreateEndpoint(s.ctx, s.o.View.Network.ID, hns.Endpoint{
		Name: hns.OwnedEndpointName(want.IP), IPs: []netip.Addr{want.IP}, MAC: want.MAC})
	s.write(WriteEPCreate)
	if err != nil {
		if isFatal(err) {
			return err
		}
		s.a.backoff(key, err)
		s.fail("source-VIP endpoint "+want.IP.String(), err)
		s.r.Skipped = SkippedSourceVIP
		return nil
	}
	delete(s.a.retries, key)
	s.local[want.IP] = ep.ID
	return nil
}

// deleteStaleSourceVIPEndpoints deletes the source-VIP endpoints the agent
// created for an address that is no longer the source VIP (the config
// changed it, or now names the CNI's endpoint). One that an LB in HNS still
// uses, because its update failed, is kept until that is fixed.
func (s *syncState) deleteStaleSourceVIPEndpoints() error {
	if len(s.ownLocal) == 0 {
		return nil
	}
	a := s.a
	cur, _ := netip.ParseAddr(s.d.Effective.SourceVIP.Address)
	for _, i := range s.ownLocal {
		ep := &s.o.View.Endpoints[i]
		if ep.HasIP(cur) || s.sourceVIPInUse(ep) {
			continue
		}
		err := a.owned.DeleteEndpoint(s.ctx, *ep)
		s.write(WriteEPDelete)
		if err != nil && !hns.IsNotFound(err) {
			if isFatal(err) {
				return err
			}
			s.fail("source-VIP endpoint "+ep.ID, err)
		}
	}
	return nil
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

// ensureRemoteEndpoints resolves every desired remote endpoint to an HNS ID:
// ours if it matches, a foreign one holding the IP as it is, else a new one.
// Most are resolved as listed, in any order; only the rest are sorted, so
// that calls are made in IP order.
func (s *syncState) ensureRemoteEndpoints() error {
	var todo []engine.RemoteEndpoint
	for _, want := range s.d.RemoteEndpoints {
		if !s.resolveRemote(want) {
			todo = append(todo, want)
		}
	}
	slices.SortFunc(todo, func(a, b engine.RemoteEndpoint) int { return a.IP.Compare(b.IP) })
	for _, want := range todo {
		if err := s.replaceRemote(want); err != nil {
			return err
		}
	}
	return nil
}

// resolveRemote maps want to the endpoint holding its IP, unless that is
// missing or one of ours that no longer matches.
func (s *syncState) resolveRemote(want engine.RemoteEndpoint) bool {
	if _, ok := s.local[want.IP]; ok {
		return true
	}
	i, ok := s.remoteByIP[want.IP]
	if !ok {
		return false
	}
	ep := s.o.View.Endpoints[i]
	// A foreign endpoint is used as it is; ours must match.
	if !remoteMatches(ep, want) && s.a.owned.OwnsEndpoint(ep) {
		return false
	}
	if !s.remembered[i] {
		s.a.epIDs[want.IP] = ep.ID
	}
	s.resolved[i] = true
	if len(s.a.retries) > 0 {
		// A create that failed was carried out after all (it timed out),
		// or another's endpoint holds the address: nothing to retry.
		delete(s.a.retries, epRetryKey(want.IP))
	}
	return true
}

// replaceRemote creates want's endpoint, deleting our stale one first.
func (s *syncState) replaceRemote(want engine.RemoteEndpoint) error {
	a := s.a
	if i, ok := s.remoteByIP[want.IP]; ok {
		ep := s.o.View.Endpoints[i]
		// Ours but stale (e.g. the provider address moved): endpoints
		// cannot be modified, so replace it.
		if err := a.owned.DeleteEndpoint(s.ctx, ep); err != nil && !hns.IsNotFound(err) {
			if isFatal(err) {
				return err
			}
			s.fail("endpoint "+want.IP.String(), err)
			return nil
		}
		s.write(WriteEPDelete)
		s.markGone(ep.ID)
		delete(s.remoteByIP, want.IP)
		delete(a.epIDs, want.IP)
	}
	key := epRetryKey(want.IP)
	if err, wait := a.waiting(key); wait {
		s.r.Failures = append(s.r.Failures, Failure{Object: "endpoint " + want.IP.String(), Err: err, Deferred: true})
		return nil
	}
	ep, err := a.owned.CreateEndpoint(s.ctx, s.o.View.Network.ID, hns.Endpoint{
		Name: hns.OwnedEndpointName(want.IP), IPs: []netip.Addr{want.IP}, MAC: want.MAC,
		Remote: true, ProviderAddress: want.ProviderAddress})
	s.write(WriteEPCreate)
	if err != nil {
		if isFatal(err) {
			return err
		}
		a.backoff(key, err)
		s.fail("endpoint "+want.IP.String(), err)
		return nil
	}
	delete(a.retries, key)
	a.epIDs[want.IP] = ep.ID
	s.createdRemote++
	return nil
}

func remoteMatches(ep hns.Endpoint, want engine.RemoteEndpoint) bool {
	return strings.EqualFold(ep.MAC, want.MAC) && ep.ProviderAddress == want.ProviderAddress
}

// build turns a desired LB into HNS's form. A backend without an endpoint
// (its creation failed) is left out, as winkernel does. Every LB is built on every sync to be compared, so the
// result's slices are scratch space, valid until the next build: detach
// it before handing it to HNS.
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
				id = s.a.epIDs[b.IP]
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

// frontKey is a frontend without the internal port: an LB whose target port
// changed is still the same LB, to be modified.
type frontKey struct {
	vip      netip.Addr
	protocol uint32
	port     uint16
	v6       bool
}

func frontOf(lb hns.LoadBalancer) frontKey {
	return frontKey{lb.VIP(), lb.PortMapping.Protocol, lb.PortMapping.ExternalPort, lb.IsIPv6()}
}

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
	a := s.a
	adopted, err := a.owned.Settle(s.o.LoadBalancers)
	if err != nil {
		return err
	}
	s.r.Adopted = adopted
	for key, id := range a.lbIDs {
		uid := strings.ToUpper(id)
		if _, ok := s.listedLB[uid]; ok && a.owned.Ledger.Has(id) {
			s.claimed[uid] = true
			continue
		}
		delete(a.lbIDs, key)
		if _, wanted := s.d.LoadBalancers[key]; wanted {
			s.r.DriftRepairs.LoadBalancers++
		}
	}
	unmapped := s.unmappedLoadBalancers()
	if len(unmapped) == 0 {
		return nil // the usual resync: no listed LB needs indexing by content
	}
	ownedByFront := map[frontKey]string{}
	// content signature -> unclaimed listed IDs, proven the agent's or not
	owned, other := map[string][]string{}, map[string][]string{}
	for _, lb := range s.o.LoadBalancers {
		uid := strings.ToUpper(lb.ID)
		switch {
		case s.claimed[uid]:
		case a.owned.OwnsLoadBalancer(lb):
			ownedByFront[frontOf(lb)] = uid
			owned[signature(lb)] = append(owned[signature(lb)], uid)
		default:
			other[signature(lb)] = append(other[signature(lb)], uid)
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
func (s *syncState) unclaimedSame(ids []string, want hns.LoadBalancer) string {
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

// sortLoadBalancers sorts as engine.Desired.SortedLoadBalancers does.
func sortLoadBalancers(lbs []engine.LoadBalancer) {
	slices.SortFunc(lbs, func(a, b engine.LoadBalancer) int { return a.Key.Compare(b.Key) })
}

func signature(lb hns.LoadBalancer) string {
	return fmt.Sprint(lb.FrontendVIPs, lb.PortMapping, lb.Flags, lb.SourceVIP)
}

// deleteUnwantedLoadBalancers removes the agent's LBs no desired key maps
// to, before creates, so that frontends they hold are free. A recorded one
// that no longer proves to be the agent's is disowned instead.
func (s *syncState) deleteUnwantedLoadBalancers() error {
	a := s.a
	for key, id := range a.lbIDs {
		if _, ok := s.d.LoadBalancers[key]; !ok {
			delete(a.lbIDs, key)
			delete(s.claimed, strings.ToUpper(id))
		}
	}
	for _, lb := range s.o.LoadBalancers {
		if s.claimed[strings.ToUpper(lb.ID)] || !a.owned.Ledger.Has(lb.ID) {
			continue
		}
		if !a.owned.OwnsLoadBalancer(lb) {
			if err := s.disown(lb); err != nil {
				return err
			}
			continue
		}
		if err := s.deleteLB(lb); err != nil {
			if isFatal(err) {
				return err
			}
			s.fail("load balancer "+lb.ID, err)
		}
	}
	return nil
}

func (s *syncState) deleteLB(lb hns.LoadBalancer) error {
	err := s.a.owned.DeleteLoadBalancer(s.ctx, lb)
	s.write(WriteLBDelete)
	if err != nil && !hns.IsNotFound(err) {
		return err
	}
	delete(s.listedLB, strings.ToUpper(lb.ID))
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
		return err
	}
	s.r.Disowned = append(s.r.Disowned, lb.String())
	return nil
}

// programLoadBalancers creates or updates every desired LB that differs
// from HNS. A failure only affects that LB; it is retried with backoff.
// Most LBs are as wanted, in any order; only the rest are sorted, so that
// calls are made in key order.
func (s *syncState) programLoadBalancers() error {
	a := s.a
	a.lastModified, a.modified = a.modified, a.lastModified
	clear(a.modified)
	var todo []engine.LoadBalancer
	for _, lb := range s.d.LoadBalancers {
		if s.programmed(lb) {
			s.r.LBsProgrammed++
			delete(a.retries, lbRetryKey(lb.Key))
		} else {
			todo = append(todo, lb)
		}
	}
	sortLoadBalancers(todo)
	for _, lb := range todo {
		want := s.build(lb)
		want = detached(want)
		id, mapped := a.lbIDs[lb.Key]
		rk := lbRetryKey(lb.Key)
		if err, wait := a.waiting(rk); wait {
			s.r.Failures = append(s.r.Failures, Failure{Object: "load balancer " + lb.Key.String(), Err: err, Deferred: true})
			continue
		}
		if len(want.BackendEndpointIDs) == 0 {
			// Every backend's endpoint failed; leave what is there.
			s.fail("load balancer "+lb.Key.String(), fmt.Errorf("no backend endpoint could be created"))
			continue
		}
		err := s.update(lb, want, id, mapped)
		if err != nil {
			if isFatal(err) {
				return err
			}
			a.backoff(rk, err)
			s.fail("load balancer "+lb.Key.String(), err)
			continue
		}
		delete(a.retries, rk)
		s.r.LBsProgrammed++
	}
	return nil
}

// programmed reports whether lb's key is mapped to a listed LB with lb's
// content.
func (s *syncState) programmed(lb engine.LoadBalancer) bool {
	id, mapped := s.a.lbIDs[lb.Key]
	if !mapped {
		return false
	}
	want := s.build(lb)
	return sameLB(s.listedLB[strings.ToUpper(id)], want)
}

// update brings one LB to want: modify in place when HNS can (and the
// service did not opt out), else delete and create.
func (s *syncState) update(lb engine.LoadBalancer, want hns.LoadBalancer, id string, mapped bool) error {
	a := s.a
	cur := s.listedLB[strings.ToUpper(id)]
	if mapped && !a.owned.OwnsLoadBalancer(cur) {
		// Changed behind the agent's back: no longer its own. If it still
		// holds the frontend, the create below replaces it
		// (docs/design/dataplane.md#foreign-load-balancers).
		if err := s.disown(cur); err != nil {
			return err
		}
		delete(a.lbIDs, lb.Key)
		mapped = false
	}
	// The last modify asked of this LB. modified holds those of the last
	// full sync and of every ApplyChanges since (a full sync swaps it into
	// lastModified first): an ApplyChanges must compare the model with its
	// predecessors' asks, not with an older one they overtook.
	asked, ok := a.modified[lb.Key]
	if !ok {
		asked, ok = a.lastModified[lb.Key]
	}
	if ok && mapped && !sameLB(cur, asked) {
		// That modify was accepted but not carried out (HNS 15.4 keeps
		// the old backends, k/k #131466): modifying again would repeat
		// forever.
		a.noModify = true
	}
	if mapped && !a.noModify && !lb.Recreate && s.o.View.Capabilities.ModifyLoadBalancer {
		got, err := a.owned.ModifyLoadBalancer(s.ctx, cur, want)
		s.write(WriteLBModify)
		if err == nil {
			s.listedLB[strings.ToUpper(got.ID)] = got
			a.modified[lb.Key] = want
			return nil
		}
		if !hns.IsNotImplemented(err) {
			return err
		}
		a.noModify = true // E_NOTIMPL: fall back for the rest of the process
	}
	if mapped {
		if err := s.deleteLB(cur); err != nil {
			return err
		}
		delete(a.lbIDs, lb.Key)
	}
	got, err := s.create(want)
	if err != nil {
		return err
	}
	a.lbIDs[lb.Key] = got.ID
	s.listedLB[strings.ToUpper(got.ID)] = got
	// A new LB: no modify of the key asked before is left to check (an
	// ApplyChanges would compare it with the LB created since).
	delete(a.modified, lb.Key)
	delete(a.lastModified, lb.Key)
	return nil
}

// create creates an LB. On "port exists", like winkernel
// (docs/design/dataplane.md#foreign-load-balancers), if exactly
// one listed LB has the same frontend it is deleted — even a foreign one —
// and the create retried once; the replacement is reported.
func (s *syncState) create(want hns.LoadBalancer) (hns.LoadBalancer, error) {
	got, err := s.a.owned.CreateLoadBalancer(s.ctx, want)
	s.write(WriteLBCreate)
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
	s.write(WriteLBDelete)
	if derr != nil && !hns.IsNotFound(derr) {
		return got, err
	}
	delete(s.listedLB, strings.ToUpper(b.ID))
	if !owned {
		s.r.ForeignReplaced = append(s.r.ForeignReplaced, fmt.Sprintf("%s (%s)", b.Frontend(), b.ID))
	}
	got, err = s.a.owned.CreateLoadBalancer(s.ctx, want)
	s.write(WriteLBCreate)
	return got, err
}

// deleteUnusedRemoteEndpoints deletes our remote endpoints that no desired
// endpoint wants and no LB still in HNS references (one whose update failed
// keeps its endpoints alive until it is fixed).
func (s *syncState) deleteUnusedRemoteEndpoints() error {
	a := s.a
	var inUse map[string]bool // built on first need: most syncs delete nothing
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
		if inUse[strings.ToUpper(ep.ID)] {
			kept++
			continue
		}
		err := a.owned.DeleteEndpoint(s.ctx, *ep)
		s.write(WriteEPDelete)
		if err != nil && !hns.IsNotFound(err) {
			if isFatal(err) {
				return err
			}
			s.fail("endpoint "+ep.ID, err)
			kept++
			continue
		}
		for _, ip := range ep.IPs {
			if strings.EqualFold(a.epIDs[ip], ep.ID) {
				delete(a.epIDs, ip)
			}
		}
	}
	// Endpoints created this sync are not in the observation.
	s.r.RemoteEndpoints = kept + s.createdRemote
	return nil
}

// wanted reports whether a desired remote endpoint is mapped to ep.
func (s *syncState) wanted(ep *hns.Endpoint) bool {
	for _, ip := range ep.IPs {
		if _, ok := s.d.RemoteEndpoints[ip]; ok && strings.EqualFold(s.a.epIDs[ip], ep.ID) {
			return true
		}
	}
	return false
}

// backendsInUse lists the upper-case IDs of the endpoints that the LBs in
// HNS reference.
func (s *syncState) backendsInUse() map[string]bool {
	inUse := map[string]bool{}
	for _, lb := range s.listedLB {
		for _, id := range lb.BackendEndpointIDs {
			inUse[strings.ToUpper(id)] = true
		}
	}
	return inUse
}
