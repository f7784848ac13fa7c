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
	SkippedHNSNotRunning = "HNSNotRunning"
	SkippedBlocked       = "Blocked" // the Desired is not programmable; see its Effective.Blocked
	SkippedSourceVIP     = "SourceVIPEndpointFailed"
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
	// recreated.
	DriftRepairs int
	// Adopted counts unrecorded LBs identical to a desired one, taken over
	// without a call.
	Adopted int
	// ForeignReplaced lists the frontends of foreign LBs deleted because
	// they blocked a create (reference §7.4).
	ForeignReplaced []string
	Failures        []Failure
}

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

	local      map[netip.Addr]string       // IP -> local endpoint ID
	remoteByIP map[netip.Addr]hns.Endpoint // IP -> remote endpoint (ours preferred)
	listedEP   map[string]hns.Endpoint     // ID -> endpoint
	listedLB   map[string]hns.LoadBalancer // ID -> LB
	claimed    map[string]bool             // LB IDs mapped to a desired key this sync
}

// Apply programs d given what o observed. HNS is left as it is when d is
// not programmable; an HNS-not-running answer ends the sync at once.
func (a *Applier) Apply(ctx context.Context, o *Observation, d *engine.Desired) (Result, error) {
	r := Result{Writes: map[Write]int{}, LBsDesired: len(d.LoadBalancers)}
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

	s := &syncState{a: a, ctx: ctx, o: o, d: d, r: &r,
		local: map[netip.Addr]string{}, remoteByIP: map[netip.Addr]hns.Endpoint{},
		listedEP: map[string]hns.Endpoint{}, listedLB: map[string]hns.LoadBalancer{}, claimed: map[string]bool{}}
	err := s.run()
	r.LBsFailed = r.LBsDesired - r.LBsProgrammed
	return r, err
}

func (s *syncState) run() error {
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
	return s.deleteUnusedRemoteEndpoints()
}

func (s *syncState) write(w Write) { s.r.Writes[w]++ }

func (s *syncState) fail(object string, err error) {
	s.r.Failures = append(s.r.Failures, Failure{Object: object, Err: err})
}

// indexEndpoints classifies the network's endpoints. Ours are recognised by
// the ledger or by the winproxy- name (ledger lost): the latter are adopted
// without a call. A remote endpoint of ours that duplicates a local
// endpoint's IP (the WS2019/2022 quirk) is deleted; foreign ones are left.
func (s *syncState) indexEndpoints() error {
	a := s.a
	var dups []hns.Endpoint
	for _, ep := range s.o.View.Endpoints {
		s.listedEP[strings.ToUpper(ep.ID)] = ep
		if !ep.Remote {
			for _, ip := range ep.IPs {
				s.local[ip] = ep.ID
			}
		}
	}
	for _, ep := range s.o.View.Endpoints {
		if !ep.Remote {
			continue
		}
		mine := a.owned.OwnsEndpoint(ep)
		if mine && !a.owned.Ledger.Owns(hns.KindEndpoint, ep.ID) {
			if err := a.owned.Adopt(hns.KindEndpoint, ep.ID); err != nil {
				return err
			}
		}
		for _, ip := range ep.IPs {
			if _, isLocal := s.local[ip]; isLocal {
				if mine {
					dups = append(dups, ep)
				}
				continue
			}
			if cur, ok := s.remoteByIP[ip]; !ok || (!a.owned.OwnsEndpoint(cur) && mine) {
				s.remoteByIP[ip] = ep
			}
		}
	}
	// Endpoints we knew by IP that are no longer listed were deleted behind
	// our back (or went with the network); forget them.
	for ip, id := range a.epIDs {
		if _, ok := s.listedEP[strings.ToUpper(id)]; !ok {
			delete(a.epIDs, ip)
			_ = a.owned.Ledger.Forget(hns.KindEndpoint, id)
			if _, wanted := s.d.RemoteEndpoints[ip]; wanted {
				s.r.DriftRepairs++
			}
		}
	}
	for _, ep := range dups {
		if err := a.owned.DeleteEndpoint(s.ctx, ep.ID); err != nil && !hns.IsNotFound(err) {
			if isFatal(err) {
				return err
			}
			s.fail("endpoint "+ep.ID, err)
			continue
		}
		s.write(WriteEPDelete)
		delete(s.listedEP, strings.ToUpper(ep.ID))
	}
	return nil
}

// ensureSourceVIP creates the overlay source-VIP endpoint when the engine
// asks for it. Failing that, no load balancer is programmed this sync
// (winkernel §4.2), and HNS is otherwise left as it is.
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
	s.listedEP[strings.ToUpper(ep.ID)] = ep
	return nil
}

// ensureRemoteEndpoints resolves every desired remote endpoint to an HNS ID:
// ours if it matches, a foreign one holding the IP as it is, else a new one.
func (s *syncState) ensureRemoteEndpoints() error {
	a := s.a
	for _, want := range s.d.SortedRemoteEndpoints() {
		if _, ok := s.local[want.IP]; ok {
			continue
		}
		if ep, ok := s.remoteByIP[want.IP]; ok {
			if !a.owned.OwnsEndpoint(ep) || remoteMatches(ep, want) {
				a.epIDs[want.IP] = ep.ID
				continue
			}
			// Ours but stale (e.g. the provider address moved): endpoints
			// cannot be modified, so replace it.
			if err := a.owned.DeleteEndpoint(s.ctx, ep.ID); err != nil && !hns.IsNotFound(err) {
				if isFatal(err) {
					return err
				}
				s.fail("endpoint "+want.IP.String(), err)
				continue
			}
			s.write(WriteEPDelete)
			delete(s.listedEP, strings.ToUpper(ep.ID))
			delete(s.remoteByIP, want.IP)
			delete(a.epIDs, want.IP)
		}
		key := epRetryKey(want.IP)
		if err, wait := a.waiting(key); wait {
			s.r.Failures = append(s.r.Failures, Failure{Object: "endpoint " + want.IP.String(), Err: err, Deferred: true})
			continue
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
			continue
		}
		delete(a.retries, key)
		a.epIDs[want.IP] = ep.ID
		s.remoteByIP[want.IP] = ep
		s.listedEP[strings.ToUpper(ep.ID)] = ep
	}
	return nil
}

func remoteMatches(ep hns.Endpoint, want engine.RemoteEndpoint) bool {
	return strings.EqualFold(ep.MAC, want.MAC) && ep.ProviderAddress == want.ProviderAddress
}

// build turns a desired LB into HNS's form; ok is false when a backend has
// no endpoint (its creation failed): such backends are left out, as
// winkernel does.
func (s *syncState) build(lb engine.LoadBalancer) (hns.LoadBalancer, bool) {
	out := hns.LoadBalancer{
		PortMapping: hns.PortMapping{Protocol: lb.Key.Protocol, InternalPort: lb.InternalPort, ExternalPort: lb.Key.ExternalPort,
			DistributionType: lb.Distribution, Flags: lb.PortMappingFlags},
		Flags:     lb.Flags,
		SourceVIP: lb.SourceVIP,
	}
	if lb.Key.VIP.IsValid() {
		out.FrontendVIPs = []netip.Addr{lb.Key.VIP}
	}
	complete := true
	for _, b := range lb.Backends {
		id := b.EndpointID
		if !b.Local {
			if lid, ok := s.local[b.IP]; ok {
				id = lid
			} else {
				id = s.a.epIDs[b.IP]
			}
		}
		if id == "" {
			complete = false
			continue
		}
		out.BackendEndpointIDs = append(out.BackendEndpointIDs, id)
	}
	return out, complete
}

func sameLB(a, b hns.LoadBalancer) bool {
	return slices.Equal(a.FrontendVIPs, b.FrontendVIPs) && a.PortMapping == b.PortMapping && a.Flags == b.Flags &&
		a.SourceVIP == b.SourceVIP && sameIDs(a.BackendEndpointIDs, b.BackendEndpointIDs)
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
// it is still listed (else that is drift), or after a restart an owned LB
// with the same content or the same frontend, or an unowned LB identical to
// the desired one (adopted: a crash between create and ledger write, or a
// previous proxy's LB).
func (s *syncState) matchLoadBalancers() error {
	a := s.a
	ownedByFront := map[frontKey]string{}
	exact := map[string][]string{} // content signature -> listed IDs
	for _, lb := range s.o.LoadBalancers {
		if a.owned.OwnsLoadBalancer(lb.ID) {
			ownedByFront[frontOf(lb)] = strings.ToUpper(lb.ID)
		}
		exact[signature(lb)] = append(exact[signature(lb)], strings.ToUpper(lb.ID))
	}
	for key, id := range a.lbIDs {
		uid := strings.ToUpper(id)
		if _, ok := s.listedLB[uid]; ok && a.owned.OwnsLoadBalancer(id) {
			s.claimed[uid] = true
			continue
		}
		delete(a.lbIDs, key)
		_ = a.owned.Ledger.Forget(hns.KindLoadBalancer, id)
		if _, wanted := s.d.LoadBalancers[key]; wanted {
			s.r.DriftRepairs++
		}
	}
	for _, lb := range s.d.SortedLoadBalancers() {
		if _, ok := a.lbIDs[lb.Key]; ok {
			continue
		}
		want, _ := s.build(lb)
		var found string
		for _, id := range exact[signature(want)] {
			if !s.claimed[id] && sameLB(s.listedLB[id], want) {
				found = id
				break
			}
		}
		if found == "" {
			if id, ok := ownedByFront[frontOf(want)]; ok && !s.claimed[id] {
				found = id
			}
		}
		if found == "" {
			continue
		}
		if !a.owned.OwnsLoadBalancer(found) {
			if err := a.owned.Adopt(hns.KindLoadBalancer, found); err != nil {
				return err
			}
			s.r.Adopted++
		}
		a.lbIDs[lb.Key] = s.listedLB[found].ID
		s.claimed[found] = true
	}
	return nil
}

func signature(lb hns.LoadBalancer) string {
	return fmt.Sprint(lb.FrontendVIPs, lb.PortMapping, lb.Flags, lb.SourceVIP)
}

// deleteUnwantedLoadBalancers removes owned LBs no desired key maps to,
// before creates, so that frontends they hold are free.
func (s *syncState) deleteUnwantedLoadBalancers() error {
	a := s.a
	for key, id := range a.lbIDs {
		if _, ok := s.d.LoadBalancers[key]; !ok {
			delete(a.lbIDs, key)
			delete(s.claimed, strings.ToUpper(id))
		}
	}
	for _, lb := range s.o.LoadBalancers {
		uid := strings.ToUpper(lb.ID)
		if s.claimed[uid] || !a.owned.OwnsLoadBalancer(lb.ID) {
			continue
		}
		if err := s.deleteLB(lb.ID); err != nil {
			if isFatal(err) {
				return err
			}
			s.fail("load balancer "+lb.ID, err)
		}
	}
	return nil
}

func (s *syncState) deleteLB(id string) error {
	err := s.a.owned.DeleteLoadBalancer(s.ctx, id)
	s.write(WriteLBDelete)
	if err != nil && !hns.IsNotFound(err) {
		return err
	}
	delete(s.listedLB, strings.ToUpper(id))
	return nil
}

// programLoadBalancers creates or updates every desired LB that differs
// from HNS. A failure only affects that LB; it is retried with backoff.
func (s *syncState) programLoadBalancers() error {
	a := s.a
	for _, lb := range s.d.SortedLoadBalancers() {
		want, _ := s.build(lb)
		id, mapped := a.lbIDs[lb.Key]
		if mapped && sameLB(s.listedLB[strings.ToUpper(id)], want) {
			s.r.LBsProgrammed++
			delete(a.retries, lbRetryKey(lb.Key))
			continue
		}
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

// update brings one LB to want: modify in place when HNS can (and the
// service did not opt out), else delete and create.
func (s *syncState) update(lb engine.LoadBalancer, want hns.LoadBalancer, id string, mapped bool) error {
	a := s.a
	if mapped && !a.noModify && !lb.Recreate && s.o.View.Capabilities.ModifyLoadBalancer {
		got, err := a.owned.ModifyLoadBalancer(s.ctx, id, want)
		s.write(WriteLBModify)
		if err == nil {
			s.listedLB[strings.ToUpper(got.ID)] = got
			return nil
		}
		if !hns.IsNotImplemented(err) {
			return err
		}
		a.noModify = true // E_NOTIMPL: fall back for the rest of the process
	}
	if mapped {
		if err := s.deleteLB(id); err != nil {
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
	return nil
}

// create creates an LB. On "port exists", like winkernel (§7.4), if exactly
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
	owned := s.a.owned.OwnsLoadBalancer(b.ID)
	var derr error
	if owned {
		derr = s.a.owned.DeleteLoadBalancer(s.ctx, b.ID)
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
	inUse := map[string]bool{}
	for _, lb := range s.listedLB {
		for _, id := range lb.BackendEndpointIDs {
			inUse[strings.ToUpper(id)] = true
		}
	}
	kept := 0
	for _, ep := range s.o.View.Endpoints {
		uid := strings.ToUpper(ep.ID)
		if _, listed := s.listedEP[uid]; !listed || !ep.Remote || !a.owned.OwnsEndpoint(ep) {
			continue
		}
		wanted := false
		for _, ip := range ep.IPs {
			if _, ok := s.d.RemoteEndpoints[ip]; ok && strings.EqualFold(a.epIDs[ip], ep.ID) {
				wanted = true
			}
		}
		if wanted || inUse[uid] {
			kept++
			continue
		}
		err := a.owned.DeleteEndpoint(s.ctx, ep.ID)
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
	observed := make(map[string]bool, len(s.o.View.Endpoints))
	for _, ep := range s.o.View.Endpoints {
		observed[strings.ToUpper(ep.ID)] = true
	}
	for _, id := range a.epIDs {
		if !observed[strings.ToUpper(id)] {
			kept++
		}
	}
	s.r.RemoteEndpoints = kept
	return nil
}
