package engine

import (
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

// Incremental is the engine made incremental: it keeps each service's inputs and
// contribution, and Desired recomputes only the services whose service,
// slices or looked-up local HNS endpoints changed since the last call (all
// of them when the node context changed). Its result equals Compute over the
// same inputs. An Incremental is not safe for concurrent use.
type Incremental struct {
	ctx      *nodeContext
	services map[string]*corev1.Service
	slices   map[string]map[string]*discoveryv1.EndpointSlice // service -> slice name -> slice
	sliceSvc map[string]string                                // namespace/slice -> service
	results  map[string]svcResult
	byIP     map[netip.Addr]map[string]struct{}
	dirty    map[string]struct{}

	lbContrib map[LBKey]map[string]LoadBalancer
	frontends map[frontKey]map[LBKey]struct{}
	remotes   map[netip.Addr]*remoteSlot
	desired   Desired
}

type remoteSlot struct {
	backend, vip         RemoteEndpoint
	backendRefs, vipRefs int
}

// NewIncremental returns an empty Incremental; call SetNode before Desired.
func NewIncremental() *Incremental {
	return &Incremental{
		services:  map[string]*corev1.Service{},
		slices:    map[string]map[string]*discoveryv1.EndpointSlice{},
		sliceSvc:  map[string]string{},
		results:   map[string]svcResult{},
		byIP:      map[netip.Addr]map[string]struct{}{},
		dirty:     map[string]struct{}{},
		lbContrib: map[LBKey]map[string]LoadBalancer{},
		frontends: map[frontKey]map[LBKey]struct{}{},
		remotes:   map[netip.Addr]*remoteSlot{},
		desired: Desired{
			LoadBalancers:   map[LBKey]LoadBalancer{},
			RemoteEndpoints: map[netip.Addr]RemoteEndpoint{},
			svcProblems:     map[string][]Problem{},
			conflicts:       map[LBKey]Problem{},
		},
	}
}

// SetNode sets the node context: config, this node, the other nodes and
// the HNS view. Services are recomputed only where it matters: all of them
// when anything but the local endpoints changed, else those that looked up
// a changed local endpoint IP.
func (c *Incremental) SetNode(nodeName string, cfg v1alpha1.ResolvedProxyConfig, node *corev1.Node, nodes []*corev1.Node, view HNSView) {
	n := newNodeContext(nodeName, &cfg, node, nodes, &view)
	old := c.ctx
	c.ctx = n
	if old == nil || !reflect.DeepEqual(old.shared, n.shared) {
		for k := range c.services {
			c.dirty[k] = struct{}{}
		}
		return
	}
	for ip, id := range n.local {
		if old.local[ip] != id {
			c.markIP(ip)
		}
	}
	for ip := range old.local {
		if _, ok := n.local[ip]; !ok {
			c.markIP(ip)
		}
	}
}

func (c *Incremental) markIP(ip netip.Addr) {
	for k := range c.byIP[ip] {
		c.dirty[k] = struct{}{}
	}
}

// SetService adds or replaces a service.
func (c *Incremental) SetService(svc *corev1.Service) {
	k := svc.Namespace + "/" + svc.Name
	c.services[k] = svc
	c.dirty[k] = struct{}{}
}

// DeleteService removes a service.
func (c *Incremental) DeleteService(namespace, name string) {
	k := namespace + "/" + name
	delete(c.services, k)
	c.dirty[k] = struct{}{}
}

// SetEndpointSlice adds or replaces a slice; slices without the
// kubernetes.io/service-name label belong to no service.
func (c *Incremental) SetEndpointSlice(s *discoveryv1.EndpointSlice) {
	c.DeleteEndpointSlice(s.Namespace, s.Name)
	svc := s.Labels[discoveryv1.LabelServiceName]
	if svc == "" {
		return
	}
	k := s.Namespace + "/" + svc
	if c.slices[k] == nil {
		c.slices[k] = map[string]*discoveryv1.EndpointSlice{}
	}
	c.slices[k][s.Name] = s
	c.sliceSvc[s.Namespace+"/"+s.Name] = k
	c.dirty[k] = struct{}{}
}

// DeleteEndpointSlice removes a slice.
func (c *Incremental) DeleteEndpointSlice(namespace, name string) {
	sk := namespace + "/" + name
	k, ok := c.sliceSvc[sk]
	if !ok {
		return
	}
	delete(c.sliceSvc, sk)
	delete(c.slices[k], name)
	if len(c.slices[k]) == 0 {
		delete(c.slices, k)
	}
	c.dirty[k] = struct{}{}
}

// Desired brings the result up to date and returns it (see Desired for
// its lifetime).
func (c *Incremental) Desired() *Desired {
	if c.ctx == nil {
		panic("engine: Incremental.Desired before SetNode")
	}
	touchedLB := map[LBKey]struct{}{}
	touchedIP := map[netip.Addr]struct{}{}
	sc := newServiceComputer(c.ctx, true)
	for k := range c.dirty {
		c.retract(k, touchedLB, touchedIP)
		if svc, ok := c.services[k]; ok {
			r := sc.compute(k, svc, c.sortedSlices(k)).own()
			c.contribute(k, r, touchedLB, touchedIP)
		}
	}
	clear(c.dirty)
	for k := range touchedLB {
		c.refreshFrontend(frontOf(k))
	}
	for ip := range touchedIP {
		c.refreshRemote(ip)
	}
	d := &c.desired
	d.Effective = c.ctx.effective
	d.SourceVIPEndpoint = c.ctx.svipEndpoint
	d.nodeProblems = c.ctx.problems
	return d
}

func (c *Incremental) sortedSlices(k string) []*discoveryv1.EndpointSlice {
	m := c.slices[k]
	out := make([]*discoveryv1.EndpointSlice, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[name])
	}
	return out
}

func (c *Incremental) retract(k string, touchedLB map[LBKey]struct{}, touchedIP map[netip.Addr]struct{}) {
	r, ok := c.results[k]
	if !ok {
		return
	}
	delete(c.results, k)
	delete(c.desired.svcProblems, k)
	for _, lb := range r.lbs {
		delete(c.lbContrib[lb.Key], k)
		touchedLB[lb.Key] = struct{}{}
	}
	for _, re := range r.remotes {
		s := c.remotes[re.IP]
		if re.ServiceVIP {
			s.vipRefs--
		} else {
			s.backendRefs--
		}
		touchedIP[re.IP] = struct{}{}
	}
	for _, ip := range r.ips {
		delete(c.byIP[ip], k)
		if len(c.byIP[ip]) == 0 {
			delete(c.byIP, ip)
		}
	}
}

func (c *Incremental) contribute(k string, r svcResult, touchedLB map[LBKey]struct{}, touchedIP map[netip.Addr]struct{}) {
	c.results[k] = r
	if len(r.problems) > 0 {
		c.desired.svcProblems[k] = r.problems
	}
	for _, lb := range r.lbs {
		m := c.lbContrib[lb.Key]
		if m == nil {
			m = map[string]LoadBalancer{}
			c.lbContrib[lb.Key] = m
		}
		m[k] = lb
		touchedLB[lb.Key] = struct{}{}
		fk := frontOf(lb.Key)
		if c.frontends[fk] == nil {
			c.frontends[fk] = map[LBKey]struct{}{}
		}
		c.frontends[fk][lb.Key] = struct{}{}
	}
	for _, re := range r.remotes {
		s := c.remotes[re.IP]
		if s == nil {
			s = &remoteSlot{}
			c.remotes[re.IP] = s
		}
		if re.ServiceVIP {
			s.vip = re
			s.vipRefs++
		} else {
			s.backend = re
			s.backendRefs++
		}
		touchedIP[re.IP] = struct{}{}
	}
	for _, ip := range r.ips {
		if c.byIP[ip] == nil {
			c.byIP[ip] = map[string]struct{}{}
		}
		c.byIP[ip][k] = struct{}{}
	}
}

// refreshFrontend re-decides which key owns a frontend: the smallest key
// with a contribution wins, the others are reported as conflicts and left
// out, because HNS would refuse them anyway.
func (c *Incremental) refreshFrontend(fk frontKey) {
	keys := c.frontends[fk]
	var live []LBKey
	for k := range keys {
		if len(c.lbContrib[k]) == 0 {
			delete(keys, k)
			delete(c.lbContrib, k)
			delete(c.desired.LoadBalancers, k)
			delete(c.desired.conflicts, k)
			continue
		}
		live = append(live, k)
	}
	if len(keys) == 0 {
		delete(c.frontends, fk)
		return
	}
	winner := frontendWinner(live)
	c.desired.LoadBalancers[winner] = pick(c.lbContrib[winner])
	delete(c.desired.conflicts, winner)
	for _, k := range live[1:] {
		delete(c.desired.LoadBalancers, k)
		svc := k.Service
		if svc == "" {
			svc = slices.Min(slices.Collect(maps.Keys(c.lbContrib[k])))
		}
		c.desired.conflicts[k] = conflictProblem(k, winner, svc)
	}
}

// pick chooses the contribution of the smallest service name, so that
// services sharing a health-check LB agree whatever the update order.
func pick(m map[string]LoadBalancer) LoadBalancer {
	return m[slices.MinFunc(slices.Collect(maps.Keys(m)), strings.Compare)]
}

func (c *Incremental) refreshRemote(ip netip.Addr) {
	s := c.remotes[ip]
	switch {
	case s == nil:
	case s.backendRefs > 0:
		c.desired.RemoteEndpoints[ip] = s.backend
	case s.vipRefs > 0:
		c.desired.RemoteEndpoints[ip] = s.vip
	default:
		delete(c.remotes, ip)
		delete(c.desired.RemoteEndpoints, ip)
	}
}
