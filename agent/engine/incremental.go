package engine

import (
	"net/netip"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/agent/addrmap"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// Incremental is the engine made incremental: it keeps each service's inputs and
// contribution, and Desired recomputes only the services whose service,
// slices or looked-up local HNS endpoints changed since the last call (all
// of them when the node context changed). Its result equals Compute over the
// same inputs. An Incremental is not safe for concurrent use.
//
// Its state is most of an agent's memory (docs/performance.md), so what is
// kept per address, key and frontend is a value, not a map or a pointer:
// most addresses are looked up by one service, most frontends are claimed
// by one key.
type Incremental struct {
	ctx      *nodeContext
	services map[string]*Service
	// slices are each service's slices, sorted by name.
	slices   map[string][]*Slice
	sliceSvc map[sliceName]string // slice -> namespace/service
	dirty    map[string]struct{}
	// sc computes the dirty services of every Desired.
	sc *serviceComputer

	// results is what each service contributed, to take it back.
	results map[string]contribution
	// addrs are, per address, the services that looked it up among the
	// local HNS endpoints (one inline, the others in lookers) and the counts
	// of those wanting its remote endpoint as a backend or as a service VIP:
	// one map for both, as nearly every backend address is both looked up
	// and a remote endpoint (100,000 at 10k services). Desired.RemoteEndpoints
	// reads it and makes each address's endpoint when asked
	// (incrementalRemotes); remotes counts its addresses with a remote
	// endpoint.
	addrs   addrmap.Map[addrUse]
	lookers lookers
	remotes int
	// lbs are the contributions to each LB key: its own service's, or each
	// sharing service's for a shared (health-check) key.
	lbs map[LBKey]lbContributions
	// frontends are the keys claiming each frontend.
	frontends map[frontKey]smallSet[claim]
	// zoneReaders are the services whose result depends on the node's
	// zone (topology hints for zones).
	zoneReaders map[string]struct{}
	// topologyRouted counts the services routed by topology.
	topologyRouted int
	// health follows the services that need a service health server
	// (HealthCheckChanges).
	health healthChecks
	// nodes are the cluster's nodes' pod CIDRs (SetClusterNode).
	nodes clusterNodes
	// touched are the keys and addresses whose contributions a Desired
	// call changed (touch), kept between calls so that an event's Desired allocates
	// no set.
	touched touchedSets
	// before holds, during Desired, a dirty service's load balancers as they were (touch).
	before  []lbBody
	desired Desired
	// changes is what the last Desired changed; everything is set when
	// SetNode changed more than services (Changes).
	changes    Changes
	everything bool
}

// Changes is what one Desired call changed, for an applier that programs
// only that: the keys whose load balancer may differ (with every key that
// shares a frontend with one of them, whose winner may have changed), and
// the addresses whose remote endpoint may differ. Everything is set when
// the node context changed (config, node facts, the local endpoints): then
// anything may differ, the source VIP and the effective settings too.
type Changes struct {
	LoadBalancers   []LBKey
	RemoteEndpoints []netip.Addr
	Everything      bool
}

// Changes is what the last Desired call changed. The slices are valid until
// the next Desired call.
func (c *Incremental) Changes() Changes { return c.changes }

// contribution is what one service added to Desired.
type contribution struct {
	lbKeys []LBKey
	// addrs are the addresses the service used, each once.
	addrs                     addrList
	topologyRouted, readsZone bool
	// looker is the service's number among the lookers, if it looked an
	// address up.
	looker int32
}

// use adds (by +1) or takes back (by -1) what the service numbered looker
// among the lookers did with one address.
func (c *Incremental) use(looker int32, ip netip.Addr, ref addrRef, by int32) {
	was := c.addrs.At(ip)
	u := was
	switch ref.remote {
	case backendRemote:
		u.backend += by
	case serviceVIPRemote:
		u.serviceVIP += by
	}
	if ref.lookedUp {
		if by > 0 {
			c.lookers.add(ip, &u, looker)
		} else {
			c.lookers.remove(ip, &u, looker)
		}
	}
	c.setAddr(ip, was, u)
}

// addrUse is what the services do with one address: look it up among the
// local HNS endpoints (looker: the number of one of them, the others are in
// Incremental.lookers), and want its remote endpoint as a backend or as a
// service VIP (counted). What that remote endpoint is follows from
// the address and the node context (nodeContext.backendRemote,
// serviceVIPEndpoint), so it is made when read, not stored: at 10k services
// a MAC and a provider address per entry were a third of the map. An
// address none of them uses has no entry.
type addrUse struct {
	looker, backend, serviceVIP int32
}

func (u addrUse) unused() bool { return u.looker == 0 && !u.remote() }

// remote reports whether a remote endpoint is desired for the address.
func (u addrUse) remote() bool { return u.backend > 0 || u.serviceVIP > 0 }

// setAddr stores u for ip, which had was, or drops the entry when nothing
// uses ip, and keeps the count of remote endpoints.
func (c *Incremental) setAddr(ip netip.Addr, was, u addrUse) {
	switch {
	case was.remote() && !u.remote():
		c.remotes--
	case !was.remote() && u.remote():
		c.remotes++
	}
	if u.unused() {
		c.addrs.Delete(ip)
	} else {
		c.addrs.Set(ip, u)
	}
}

// NewIncremental returns an empty Incremental; call SetNode before Desired.
func NewIncremental() *Incremental {
	c := &Incremental{
		services:    map[string]*Service{},
		slices:      map[string][]*Slice{},
		sliceSvc:    map[sliceName]string{},
		dirty:       map[string]struct{}{},
		results:     map[string]contribution{},
		lbs:         map[LBKey]lbContributions{},
		frontends:   map[frontKey]smallSet[claim]{},
		zoneReaders: map[string]struct{}{},
		health:      newHealthChecks(),
		touched:     touchedSets{lbs: map[LBKey]struct{}{}, ips: map[netip.Addr]struct{}{}},
		desired: Desired{
			LoadBalancers: map[LBKey]LoadBalancer{},
			svcProblems:   map[string][]Problem{},
			reasons:       map[string]int{},
			conflicts:     map[LBKey]Problem{},
		},
	}
	c.desired.RemoteEndpoints = incrementalRemotes{c}
	return c
}

// SetNode sets the node context: config, this node and the HNS view (the
// other nodes come from SetClusterNode). Services are recomputed only where
// it matters: none when none of the node's inputs changed (the usual
// event-triggered sync, whose view holds the same local endpoints as the
// last: HNSView.EndpointsVersion); all of them when anything but the local
// endpoints and the node's zone changed, else those that looked up a
// changed local endpoint IP, and those whose topology read the zone if it
// changed.
func (c *Incremental) SetNode(nodeName string, cfg v1alpha1.ResolvedProxyConfig, node *corev1.Node, view HNSView) {
	in := newNodeInputs(nodeName, &cfg, node, &view)
	in.nodeCIDRs, in.nodesVersion = c.nodes.others(nodeName)
	old := c.ctx
	if old != nil && in.same(old.inputs) {
		// The network may have been read again since (the sync period's check reads it anew):
		// equal routes in a new array. Keeping the latest lets the next sync compare the
		// routes, one per node of the cluster, by their array instead of one by one.
		old.inputs.network = in.network
		return
	}
	n := newNodeContext(in, &cfg, &view, old)
	c.ctx = n
	if old == nil || !reflect.DeepEqual(old.shared, n.shared) || !sameRoutes(old.routes, n.routes) || !in.sameNodes(old.inputs) ||
		!reflect.DeepEqual(old.reported(), n.reported()) {
		for k := range c.services {
			c.dirty[k] = struct{}{}
		}
		c.everything = true
		return
	}
	if in.sameEndpoints(old.inputs) {
		// Same local endpoints: only the zone may have changed.
		c.zoneChanged(old.zone, n.zone)
		return
	}
	for ip, id := range n.local {
		if old.local[ip] != id {
			c.markIP(ip)
			c.everything = true
		}
	}
	for ip := range old.local {
		if _, ok := n.local[ip]; !ok {
			c.markIP(ip)
			c.everything = true
		}
	}
	c.zoneChanged(old.zone, n.zone)
}

// reported is what the node context says about the node besides what the
// services are computed from.
func (n *nodeContext) reported() any {
	return struct {
		e Effective
		p []Problem
		s *SourceVIPEndpoint
	}{n.effective, n.problems, n.svipEndpoint}
}

// zoneChanged recomputes the services whose topology read the zone, if it
// changed.
func (c *Incremental) zoneChanged(old, now string) {
	if old != now {
		for k := range c.zoneReaders {
			c.dirty[k] = struct{}{}
		}
	}
}

// SetClusterNode records a Node of the cluster as the informers report it:
// the engine reads the other nodes' pod CIDRs (this node's own are skipped),
// and a Node whose pod CIDRs did not change changes nothing.
func (c *Incremental) SetClusterNode(node *corev1.Node) {
	c.nodes.set(node.Name, parsePodCIDRs(node))
}

// DeleteClusterNode forgets a Node.
func (c *Incremental) DeleteClusterNode(name string) { c.nodes.delete(name) }

func (c *Incremental) markIP(ip netip.Addr) {
	for _, k := range c.lookers.of(ip, c.addrs.At(ip)) {
		c.dirty[k] = struct{}{}
	}
}

// SetService adds or replaces a service.
func (c *Incremental) SetService(svc *corev1.Service) { c.SetServiceForm(ServiceOf(svc)) }

// SetServiceForm adds or replaces a service in the engine's form; the engine keeps it and reads it
// at later syncs, so the caller must not change it.
func (c *Incremental) SetServiceForm(svc *Service) {
	k := svc.Namespace + "/" + svc.Name
	c.services[k] = svc
	c.dirty[k] = struct{}{}
	c.health.setService(k, needsHealthCheck(svc))
}

// DeleteService removes a service.
func (c *Incremental) DeleteService(namespace, name string) {
	k := namespace + "/" + name
	delete(c.services, k)
	c.health.setService(k, false)
	c.dirty[k] = struct{}{}
}

// SetEndpointSlice adds or replaces a slice; slices without the
// kubernetes.io/service-name label belong to no service.
func (c *Incremental) SetEndpointSlice(s *discoveryv1.EndpointSlice) {
	c.SetSlice(SliceOf(s))
}

// SetSlice adds or replaces a slice in the engine's form; the engine keeps it and reads it at
// later syncs, so the caller must not change it.
func (c *Incremental) SetSlice(s *Slice) {
	c.DeleteEndpointSlice(s.Namespace, s.Name)
	if s.Service == "" {
		return
	}
	k := s.Namespace + "/" + s.Service
	group := c.slices[k]
	i, _ := slices.BinarySearchFunc(group, s.Name, func(e *Slice, name string) int { return strings.Compare(e.Name, name) })
	c.slices[k] = slices.Insert(group, i, s)
	c.sliceSvc[sliceName{s.Namespace, s.Name}] = k
	c.dirty[k] = struct{}{}
	c.health.touch(k)
}

// sliceName names a slice: its namespace and name, the slice's own strings, where a key made of
// them would be a string more for each of 10k slices.
type sliceName struct{ namespace, name string }

// DeleteEndpointSlice removes a slice.
func (c *Incremental) DeleteEndpointSlice(namespace, name string) {
	sk := sliceName{namespace, name}
	k, ok := c.sliceSvc[sk]
	if !ok {
		return
	}
	delete(c.sliceSvc, sk)
	group := slices.DeleteFunc(c.slices[k], func(e *Slice) bool { return e.Name == name })
	if len(group) == 0 {
		delete(c.slices, k)
	} else {
		c.slices[k] = group
	}
	c.dirty[k] = struct{}{}
	c.health.touch(k)
}

// Desired brings the result up to date and returns it (see Desired for
// its lifetime).
func (c *Incremental) Desired() *Desired {
	if c.ctx == nil {
		panic("engine: Incremental.Desired before SetNode")
	}
	touchedLB, touchedIP := c.touched.lbs, c.touched.ips
	defer c.touched.reset()
	// One computer for every call: its scratch space, grown to the largest service computed so
	// far, would otherwise be grown again for each event's sync (a few KB of garbage an event).
	if c.sc == nil {
		c.sc = newServiceComputer(c.ctx, true)
	}
	sc := c.sc
	sc.c = c.ctx
	for k := range c.dirty {
		was := c.results[k]
		c.before = c.bodiesOf(k, was.lbKeys, c.before[:0])
		c.retract(k)
		var now contribution
		if svc, ok := c.services[k]; ok {
			now = c.contribute(k, sc.compute(k, svc, c.slices[k]))
		}
		c.touch(k, was, now, touchedLB, touchedIP)
	}
	clear(c.before[:cap(c.before)]) // no old backends held until the next call
	// A new set, not a cleared one: a map keeps the room of its largest size, and ranging over
	// it costs that room, so that after a sync of every service each event's sync would walk
	// room for all of them (14 µs at 10k services).
	c.dirty = map[string]struct{}{}
	for k := range touchedLB {
		c.refreshFrontend(frontOf(k))
	}
	c.recordChanges(touchedLB, touchedIP)
	d := &c.desired
	d.Effective = c.ctx.effective
	d.Effective.TopologyRoutedServices = c.topologyRouted
	d.SourceVIPEndpoint = c.ctx.svipEndpoint
	d.nodeProblems = c.ctx.problems
	return d
}

// touchedSets are the keys and addresses one Desired call touched.
type touchedSets struct {
	lbs map[LBKey]struct{}
	ips map[netip.Addr]struct{}
}

// maxKeptTouched bounds the sets kept for the next call: a map keeps the
// room of its largest size and ranging over it costs that room, so after a
// sync of every service (100,000 addresses at 10k services) new sets are
// made, and an event's sync does not walk room for all of them.
const maxKeptTouched = 1024

func (t *touchedSets) reset() {
	if len(t.lbs) > maxKeptTouched {
		t.lbs = map[LBKey]struct{}{}
	} else {
		clear(t.lbs)
	}
	if len(t.ips) > maxKeptTouched {
		t.ips = map[netip.Addr]struct{}{}
	} else {
		clear(t.ips)
	}
}

// recordChanges keeps what this Desired call touched for Changes, reusing
// the last call's slices.
func (c *Incremental) recordChanges(touchedLB map[LBKey]struct{}, touchedIP map[netip.Addr]struct{}) {
	ch := &c.changes
	ch.Everything, c.everything = c.everything, false
	ch.LoadBalancers, ch.RemoteEndpoints = reuse(ch.LoadBalancers, len(touchedLB)), reuse(ch.RemoteEndpoints, len(touchedIP))
	for k := range touchedLB {
		ch.LoadBalancers = append(ch.LoadBalancers, k)
	}
	// The keys sharing their frontends, walked apart: a key added to
	// touchedLB while it is ranged over may be produced again.
	for _, k := range ch.LoadBalancers[:len(touchedLB)] {
		fk := frontOf(k)
		for _, other := range claimants(fk, c.frontends[fk]) {
			if _, ok := touchedLB[other]; !ok {
				touchedLB[other] = struct{}{}
				ch.LoadBalancers = append(ch.LoadBalancers, other)
			}
		}
	}
	for ip := range touchedIP {
		ch.RemoteEndpoints = append(ch.RemoteEndpoints, ip)
	}
}

// reuse empties s for n elements, or drops it when it is far larger than
// needed: the first sync's changes name every key and address of the node
// (100,000 at 10k services), which the event syncs after it need not keep.
func reuse[T any](s []T, n int) []T {
	if cap(s) > maxKeptTouched && n <= maxKeptTouched {
		return nil
	}
	return s[:0]
}

// bodiesOf appends to bodies service k's contribution to each of keys, to tell afterwards which
// of them its next contribution changed.
func (c *Incremental) bodiesOf(k string, keys []LBKey, bodies []lbBody) []lbBody {
	for _, key := range keys {
		bodies = append(bodies, c.lbs[key].of(k))
	}
	return bodies
}

// touch records what service k's contribution now changed from the one it had (was, whose load
// balancers c.before holds): the keys whose load balancer it changed and the addresses whose
// remote endpoint it wants differently, and nothing it left as it was. An event that moves one
// endpoint of a service with ten names two addresses, not ten, and one that changes nothing the
// engine computes names none: the applier checks each named one against its model
// (agent/apply/changes.go), as kube-proxy drops a change whose previous and current states are
// equal (pkg/proxy/endpointschangetracker.go). A key whose load balancer may have changed
// without its contribution changing is named by whoever changed it: a sharing service's own
// touch, a frontend's claimants (recordChanges), or the node context (Everything).
func (c *Incremental) touch(k string, was, now contribution, touchedLB map[LBKey]struct{}, touchedIP map[netip.Addr]struct{}) {
	if slices.Equal(was.lbKeys, now.lbKeys) {
		for i, key := range now.lbKeys {
			l := c.lbs[key]
			if !l.of(k).equal(c.before[i]) {
				touchedLB[key] = struct{}{}
				continue
			}
			// Unchanged: the contribution takes back the body it had, which the desired state
			// holds (refreshFrontend runs for touched keys only), so that the new computation's
			// backends are not kept beside it (3.5 MB after an hour's churn at 10k Services).
			l.set(k, c.before[i])
			c.lbs[key] = l
		}
	} else {
		// The keys or their order differ: every claim may have changed.
		for _, key := range was.lbKeys {
			touchedLB[key] = struct{}{}
		}
		for _, key := range now.lbKeys {
			touchedLB[key] = struct{}{}
		}
	}
	for ip := range changedRemotes(was.addrs, now.addrs) {
		touchedIP[ip] = struct{}{}
	}
}

// retract takes back what service k contributed.
func (c *Incremental) retract(k string) {
	r, ok := c.results[k]
	if !ok {
		return
	}
	delete(c.results, k)
	c.desired.setProblems(k, nil)
	if r.topologyRouted {
		c.topologyRouted--
	}
	if r.readsZone {
		delete(c.zoneReaders, k)
	}
	for _, key := range r.lbKeys {
		if l, ok := c.lbs[key]; ok {
			l.remove(k)
			c.lbs[key] = l
		}
	}
	for ip, ref := range r.addrs.all() {
		c.use(r.looker, ip, ref, -1)
	}
	if r.looker != 0 {
		c.lookers.give(r.looker)
	}
}

// contribute adds what service k computed. Of a remote endpoint only its
// address and whether a backend or a service VIP wants it are kept; the
// endpoint is made when read (incrementalRemotes), a backend's overriding a
// service VIP's. It returns what it kept.
func (c *Incremental) contribute(k string, r svcResult) contribution {
	var kept contribution
	c.desired.setProblems(k, r.problems)
	if len(r.lbs) > 0 {
		kept.lbKeys = make([]LBKey, len(r.lbs))
	}
	for i, lb := range r.lbs {
		kept.lbKeys[i] = lb.Key
		l := c.lbs[lb.Key]
		l.set(k, bodyOf(lb))
		c.lbs[lb.Key] = l
		fk := frontOf(lb.Key)
		cs := c.frontends[fk]
		cs.add(claimOf(lb.Key))
		c.frontends[fk] = cs
	}
	kept.addrs = addrRefs(r.remotes, r.ips)
	if len(r.ips) > 0 {
		kept.looker = c.lookers.take(k)
	}
	for ip, ref := range kept.addrs.all() {
		c.use(kept.looker, ip, ref, +1)
	}
	kept.topologyRouted, kept.readsZone = r.topologyRouted, r.readsZone
	if r.topologyRouted {
		c.topologyRouted++
	}
	if r.readsZone {
		c.zoneReaders[k] = struct{}{}
	}
	c.results[k] = kept
	return kept
}

// refreshFrontend re-decides which key owns a frontend: the smallest key
// with a contribution wins, the others are reported as conflicts and left
// out, because HNS would refuse them anyway.
func (c *Incremental) refreshFrontend(fk frontKey) {
	cs := c.frontends[fk]
	var live []LBKey
	for _, k := range claimants(fk, cs) {
		if c.lbs[k].empty() {
			cs.remove(claimOf(k))
			delete(c.lbs, k)
			delete(c.desired.LoadBalancers, k)
			delete(c.desired.conflicts, k)
			continue
		}
		live = append(live, k)
	}
	if cs.empty() {
		delete(c.frontends, fk)
		return
	}
	c.frontends[fk] = cs
	winner := frontendWinner(live)
	c.desired.LoadBalancers[winner] = c.lbs[winner].pick().lb.with(winner)
	delete(c.desired.conflicts, winner)
	for _, k := range live[1:] {
		delete(c.desired.LoadBalancers, k)
		svc := k.Service
		if svc == "" {
			svc = c.lbs[k].pick().service
		}
		c.desired.conflicts[k] = conflictProblem(k, winner, svc)
	}
}
