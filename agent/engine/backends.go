package engine

import (
	"bytes"
	"cmp"
	"net/netip"
	"slices"
	"unique"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// endpoint is one EndpointSlice endpoint for one service port.
type endpoint struct {
	ip                          netip.Addr
	port                        uint16
	local                       bool
	ready, serving, terminating bool
	// hints are the endpoint's topology hints (topology.go), nil for none.
	hints *discoveryv1.EndpointHints
}

// backendSelection is what winkernel's endpoint pipeline
// (docs/design/dataplane.md#endpoint-selection) decides for one service
// port in one family.
type backendSelection struct {
	// all are the backends, sorted by IP; local are those a local HNS
	// endpoint holds.
	all, local []Backend
	// targetPort is the LBs' internal port.
	targetPort uint16
	// availableForLB is winkernel's endpointsAvailableForLB: not every
	// endpoint that counts is terminating or not serving.
	availableForLB bool
	// sourceVIP is the port's LBs' source VIP (zero on L2Bridge).
	sourceVIP netip.Addr
}

// selectBackends runs the endpoint pipeline for p: which endpoints pass
// the readiness filter, which HNS endpoint each is, the internal port and
// the source VIP. Remote backends' endpoints are offered as candidates in
// s.remotes: they are wanted only if a load balancer uses them. Topology
// hints then narrow the cluster set (topology.go); the internal port and
// the source VIP are winkernel's, from every endpoint that passes.
func (s *serviceComputer) selectBackends(p *portPlan, eps []*Slice) {
	c := s.c
	s.endpoints = endpointsFor(s.endpoints[:0], eps, p.family, p.port, c.node)
	mode := s.topologyMode(p)
	// inTopo says, under a topology, for each backend of b.all whether one
	// of its endpoints is in it.
	inTopo, topology := s.inTopology[:0], mode != topologyNone
	f := readinessFor(p, s.endpoints)
	b := backendSelection{availableForLB: !f.allTerminating && !f.allNonServing}
	b.targetPort = p.port.TargetPort
	if n := f.count(s.endpoints); n > 0 {
		b.all = make([]Backend, 0, n)
	}
	candidates := len(s.remotes)
	var included, mixedPorts, containsNodeOrPublic bool
	var added netip.Addr // endpoints are sorted by IP: an IP's entries are adjacent
	for _, ep := range s.endpoints {
		if !f.passes(ep) {
			continue
		}
		// HNS LBs have one internal port: winkernel takes the last
		// endpoint's (in "ip:port" order, see below), also from a local
		// endpoint it then skips for want of an HNS endpoint.
		mixedPorts = mixedPorts || included && ep.port != b.targetPort
		b.targetPort, included = ep.port, true
		in := !topology || c.inTopology(&ep, mode)
		if ep.ip == added {
			// An IP listed on two ports is one HNS endpoint: one backend
			// (winkernel lists it twice; docs/differences-from-kube-proxy.md).
			if topology && in {
				inTopo[len(inTopo)-1] = true
			}
			continue
		}
		pa, ok := s.addBackend(&b, &ep)
		if !ok {
			continue
		}
		if topology {
			inTopo = append(inTopo, in)
		}
		if c.overlay && !ep.local && nodeOrPublic(ep.ip, pa) {
			containsNodeOrPublic = true
		}
		added = ep.ip
	}
	s.inTopology = inTopo
	// When no backend is in the topology (its endpoints lack HNS endpoints),
	// the cluster set stays whole rather than empty.
	if topology && slices.Contains(inTopo, true) {
		b.all = s.keepInTopology(b.all, candidates)
		s.topologyRouted = true
	}
	s.conjureMACs(s.remotes[candidates:])
	if mixedPorts {
		b.targetPort = lastInTextOrder(s.endpoints, f).port
		s.report(v1alpha1.ReasonMixedTargetPorts, "port %q: backends listen on different ports; HNS load balancers have one internal port, %d is used", p.port.Name, b.targetPort)
	}
	b.sourceVIP = c.sourceVIPFor(p.family, containsNodeOrPublic)
	p.backendSelection = b
}

// addBackend adds ep's backend to b: the local HNS endpoint holding its
// address (which wins even when Kubernetes calls the endpoint remote), else
// a remote one, whose HNS endpoint is offered in s.remotes. It returns the
// routes' provider address of a backend Kubernetes calls remote, on
// overlay, and false for a local endpoint without an HNS endpoint, which is
// left out.
func (s *serviceComputer) addBackend(b *backendSelection, ep *endpoint) (pa netip.Addr, ok bool) {
	c := s.c
	id, held := s.lookup(ep.ip)
	switch {
	case held:
		be := Backend{IP: ep.ip, Local: true, EndpointID: id}
		b.all = append(b.all, be)
		b.local = append(b.local, be)
		if c.overlay && !ep.local {
			pa = c.pa.lookup(ep.ip)
		}
	case ep.local:
		s.report(v1alpha1.ReasonLocalEndpointNotFound, "local endpoint %s has no HNS endpoint yet; it is left out", ep.ip)
		return netip.Addr{}, false
	default:
		var re RemoteEndpoint
		re, pa = s.remoteBackend(ep.ip)
		s.remotes = append(s.remotes, re)
		b.all = append(b.all, Backend{IP: ep.ip})
	}
	return pa, true
}

// topologyMode is how the port's cluster set follows topology hints
// (topology.go); it remembers when the decision read the node's zone.
func (s *serviceComputer) topologyMode(p *portPlan) topologyMode {
	if !s.c.topology || !usesClusterSet(p) {
		return topologyNone
	}
	mode, readsZone := s.c.topologyModeOf(s.endpoints)
	s.readsZone = s.readsZone || readsZone
	return mode
}

// readinessFor is the port's readiness filter over its endpoints eps.
func readinessFor(p *portPlan, eps []endpoint) readiness {
	f := readiness{localOnly: p.policy.internalLocal && p.policy.localTrafficDSR}
	if len(p.ingress) > 0 {
		// Only services with an ingress IP look at terminating endpoints.
		f.allTerminating, f.allNonServing = terminatingState(eps, p.policy.localTrafficDSR)
	}
	return f
}

// keepInTopology leaves in all, the port's backends (s.inTopology says
// which are in the topology), only those in the topology, and among the
// remote endpoints offered since candidates (one per remote backend, in
// order) only theirs.
func (s *serviceComputer) keepInTopology(all []Backend, candidates int) []Backend {
	kept, remotes, next := all[:0], s.remotes[:candidates], candidates
	for i, be := range all {
		in := s.inTopology[i]
		if !be.Local {
			if in {
				remotes = append(remotes, s.remotes[next])
			}
			next++
		}
		if in {
			kept = append(kept, be)
		}
	}
	s.remotes = remotes
	return kept
}

// readiness is the endpoint pipeline's filter.
type readiness struct {
	// localOnly skips remote endpoints (ITP=Local with ETP=Local and DSR:
	// winkernel does not process them at all).
	localOnly bool
	// allTerminating and allNonServing are terminatingState's answers.
	allTerminating, allNonServing bool
}

// passes: if some endpoint serves, endpoints that are not ready (unless
// all terminate) or not serving are skipped; if none serves, nothing is.
func (f readiness) passes(ep endpoint) bool {
	if f.localOnly && !ep.local {
		return false
	}
	someServing := !f.allNonServing
	return !someServing || (f.allTerminating || ep.ready) && ep.serving
}

func (f readiness) count(eps []endpoint) int {
	n := 0
	for _, ep := range eps {
		if f.passes(ep) {
			n++
		}
	}
	return n
}

// lastInTextOrder is the endpoint that passes f and is last when
// endpoints are ordered as kube-proxy's endpoint-slice cache orders them,
// by their "ip:port" strings (so "10.0.0.10:80" < "10.0.0.9:80"), which is
// the endpoint whose port winkernel's LB gets.
func lastInTextOrder(eps []endpoint, f readiness) endpoint {
	var last endpoint
	var lastText, text [64]byte
	n := 0
	for _, ep := range eps {
		if !f.passes(ep) {
			continue
		}
		t := netip.AddrPortFrom(ep.ip, ep.port).AppendTo(text[:0])
		if n == 0 || bytes.Compare(t, lastText[:n]) > 0 {
			last, n = ep, copy(lastText[:], t)
		}
	}
	return last
}

// remoteBackend is the remote endpoint winkernel creates for a backend on
// another node, as backendRemote makes it but for the MAC, which
// conjureMACs adds for all of a port's backends at once; and pa, what the
// routes say: zero for none. It reports a backend in a node's pod CIDR that
// no route covers yet.
func (s *serviceComputer) remoteBackend(ip netip.Addr) (re RemoteEndpoint, pa netip.Addr) {
	c := s.c
	re = RemoteEndpoint{IP: ip}
	if !c.overlay {
		return re, pa
	}
	pa = c.pa.lookup(ip)
	re.ProviderAddress = c.providerAddressOf(ip, pa)
	if !pa.IsValid() {
		if n := c.nodeFor(ip); n != "" {
			s.report(v1alpha1.ReasonNoRemoteSubnetRoute, "backend %s is in node %s's pod CIDR but HNS has no remote-subnet route for it yet; it is treated as an external address", ip, n)
		}
	}
	return re, pa
}

// backendRemote is the remote endpoint of a backend at ip on another node,
// all of it derived from the address and the node context, which is why an
// Incremental makes it when read instead of keeping one per address: the MAC
// winkernel conjures from the address and, on overlay, the provider address
// of the backend's node, or this node's IP for an address outside the
// cluster.
func (c *nodeContext) backendRemote(ip netip.Addr) RemoteEndpoint {
	return c.backendRemoteWithMAC(ip, hns.ConjureMAC(ip))
}

// backendRemotes appends the remote endpoints of backends at ips to out,
// their MACs in one string: a full sync reads every one (100,000 at 10k
// services), and a string each would be as many allocations.
func (c *nodeContext) backendRemotes(out []RemoteEndpoint, ips []netip.Addr) []RemoteEndpoint {
	n := len(hns.FallbackMAC) // every conjured MAC has its length
	buf := make([]byte, 0, n*len(ips))
	for _, ip := range ips {
		buf = hns.AppendConjuredMAC(buf, ip)
	}
	macs := string(buf)
	for _, ip := range ips {
		out = append(out, c.backendRemoteWithMAC(ip, macs[:n]))
		macs = macs[n:]
	}
	return out
}

// backendRemoteWithMAC is backendRemote with its MAC made already.
func (c *nodeContext) backendRemoteWithMAC(ip netip.Addr, mac string) RemoteEndpoint {
	re := RemoteEndpoint{IP: ip, MAC: mac}
	if c.overlay {
		re.ProviderAddress = c.providerAddressOf(ip, c.pa.lookup(ip))
	}
	return re
}

// providerAddressOf is a remote backend's provider address: the route's,
// pa, or the node IP of the backend's family when no route covers it. A
// backend's family is its address's (endpointsFor).
func (c *nodeContext) providerAddressOf(ip, pa netip.Addr) netip.Addr {
	if pa.IsValid() {
		return pa
	}
	return c.nodeIP[familyIndex(familyOf(ip))]
}

// conjureMACs gives remote endpoints the MAC winkernel conjures from their
// address, all in one string: one allocation for a port's backends
// instead of one each.
func (s *serviceComputer) conjureMACs(rs []RemoteEndpoint) {
	if len(rs) == 0 {
		return
	}
	buf := s.macs[:0]
	for _, re := range rs {
		buf = hns.AppendConjuredMAC(buf, re.IP)
	}
	s.macs = buf
	all := string(buf)
	for i := range rs {
		n := len(hns.FallbackMAC) // every conjured MAC has its length
		rs[i].MAC, all = all[:n], all[n:]
	}
}

// nodeOrPublic: a remote backend that is a node (its address is a route's
// provider address) or outside the cluster (no route) makes the node IP
// its service's source VIP.
func nodeOrPublic(ip, pa netip.Addr) bool {
	return !pa.IsValid() || pa == ip
}

// sourceVIPFor is the source VIP of a service port's LBs on overlay: the
// node IP when a remote backend is a node or outside the cluster, else the
// configured source VIP (docs/design/dataplane.md#source-vip).
func (c *nodeContext) sourceVIPFor(fam v1alpha1.IPFamily, containsNodeOrPublic bool) netip.Addr {
	switch {
	case !c.overlay:
		return netip.Addr{}
	case containsNodeOrPublic:
		return c.nodeIP[familyIndex(fam)]
	}
	return c.sourceVIP
}

// endpointsFor appends to buf the endpoints of one service port and family
// from the service's slices (sorted by name), as kube-proxy's
// endpoint-slice cache has them (SliceEndpoint). The cache keys endpoints
// by IP and port: a later entry for the same IP and port replaces an
// earlier one unless the later one is terminating (a pod that reuses a
// terminating pod's IP wins; of two entries that are both terminating, or
// both not, the last one wins resp. the first stays). The same IP on two
// ports stays two endpoints. The result is sorted by IP and port, so it
// does not depend on slice order.
func endpointsFor(buf []endpoint, eps []*Slice, fam v1alpha1.IPFamily, sp ServicePort, node unique.Handle[string]) []endpoint {
	for _, s := range eps {
		if s.Family != fam {
			continue
		}
		port := slicePort(s, sp.Name, sp.Protocol)
		if port == 0 {
			continue
		}
		for i := range s.Endpoints {
			e := &s.Endpoints[i]
			if !e.Addr.IsValid() || familyOf(e.Addr) != fam {
				continue
			}
			buf = append(buf, endpoint{
				ip:          e.Addr.Unmap(),
				port:        uint16(port),
				local:       e.on(node),
				ready:       e.Ready,
				serving:     e.Serving,
				terminating: e.Terminating,
				hints:       e.Hints,
			})
		}
	}
	// A stable sort keeps the entries of one IP and port in slice order, for
	// the cache's rule above.
	sameIPPort := func(a, b endpoint) int { return cmp.Or(a.ip.Compare(b.ip), cmp.Compare(a.port, b.port)) }
	slices.SortStableFunc(buf, sameIPPort)
	out := buf[:0]
	for i := 0; i < len(buf); {
		kept, j := buf[i], i+1
		for ; j < len(buf) && sameIPPort(buf[j], buf[i]) == 0; j++ {
			if !buf[j].terminating {
				kept = buf[j]
			}
		}
		out = append(out, kept)
		i = j
	}
	return out
}

// slicePort is the port of a slice that serves the service port (same
// name and protocol), 0 when none does.
func slicePort(s *Slice, name string, proto corev1.Protocol) int32 {
	for _, p := range s.Ports {
		// Like kube-proxy, a port that is missing or 0 serves nothing: no
		// backend listens on port 0.
		if p.Name == name && p.Protocol == proto && p.Port != 0 {
			return p.Port
		}
	}
	return 0
}

// terminatingState is winkernel's isAllEndpointsTerminating and
// isAllEndpointsNonServing (docs/design/dataplane.md#terminating-endpoints):
// with localTrafficDSR remote endpoints are ignored in both (the code, not
// the KEP's first bullet), endpoints that failed readiness without
// terminating do not count as terminating, and both are vacuously true
// when nothing is considered.
func terminatingState(eps []endpoint, localTrafficDSR bool) (allTerminating, allNonServing bool) {
	allTerminating, allNonServing = true, true
	for _, ep := range eps {
		if localTrafficDSR && !ep.local {
			continue
		}
		if ep.serving {
			allNonServing = false
		}
		if !ep.ready && !ep.terminating {
			continue
		}
		if !ep.terminating {
			allTerminating = false
		}
	}
	return allTerminating, allNonServing
}
