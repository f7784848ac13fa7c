package engine

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// svcResult is one service's contribution to Desired.
type svcResult struct {
	lbs      []LoadBalancer
	remotes  []RemoteEndpoint
	problems []Problem
	// ips are the addresses looked up among local HNS endpoints: when one of
	// them changes, the service must be recomputed.
	ips []netip.Addr
}

// serviceComputation is computeService's work on one service.
type serviceComputation struct {
	c      *nodeContext
	svc    *corev1.Service
	name   string // namespace/name
	policy servicePolicy
	r      svcResult

	problems map[Problem]bool
	seenIP   map[netip.Addr]bool
	// Service-VIP endpoints are always wanted; backend remote endpoints
	// only when a load balancer uses them (winkernel creates them for every
	// processed backend, e.g. for an ITP=Local ClusterIP-only service too;
	// docs/differences-from-kube-proxy.md): candidates holds those.
	remotes    map[netip.Addr]RemoteEndpoint
	candidates map[netip.Addr]RemoteEndpoint
}

// computeService is the per-service part of the engine: a pure function of
// the node context, the service and its EndpointSlices (sorted by name).
// For each family and port it selects the backends and programs the table
// of LB kinds (lbKinds).
func computeService(c *nodeContext, svc *corev1.Service, eps []*discoveryv1.EndpointSlice) svcResult {
	if !c.programmable || !proxied(svc) {
		return svcResult{}
	}
	s := &serviceComputation{c: c, svc: svc, name: svc.Namespace + "/" + svc.Name,
		problems: map[Problem]bool{}, seenIP: map[netip.Addr]bool{},
		remotes: map[netip.Addr]RemoteEndpoint{}, candidates: map[netip.Addr]RemoteEndpoint{}}
	s.policy = newServicePolicy(c, svc, s.report)
	for _, fam := range c.families {
		clusterIP, ok := clusterIPOf(svc, fam)
		if !ok {
			continue
		}
		p := portPlan{family: fam, clusterIP: [1]netip.Addr{clusterIP}, ingress: ingressIPs(svc, fam),
			root: c.root[familyIndex(fam)], policy: &s.policy}
		if c.externalIPs {
			p.externalIPs = addrsOf(svc.Spec.ExternalIPs, fam)
		}
		s.serviceVIPEndpoint(&p)
		for _, sp := range svc.Spec.Ports {
			p.port, p.protocol = sp, protocolNumber(sp.Protocol)
			s.selectBackends(&p, eps)
			if len(p.all) == 0 {
				// No backend, no load balancer of any kind.
				continue
			}
			for i := range lbKinds {
				s.r.lbs = lbKinds[i].loadBalancers(s.r.lbs, s.name, &p)
			}
		}
	}
	return s.result()
}

// serviceVIPEndpoint asks for the endpoint winkernel gives every ClusterIP
// of an overlay network (host MAC, PA = node IP) unless one holds it
// already.
func (s *serviceComputation) serviceVIPEndpoint(p *portPlan) {
	c, ip := s.c, p.clusterIP[0]
	if !c.overlay {
		return
	}
	if _, held := s.lookup(ip); !held {
		s.remotes[ip] = RemoteEndpoint{IP: ip, MAC: c.hostMAC, ProviderAddress: c.nodeIP[familyIndex(p.family)], ServiceVIP: true}
	}
}

// lookup finds the local HNS endpoint holding ip, remembering that the
// service depends on it.
func (s *serviceComputation) lookup(ip netip.Addr) (string, bool) {
	if !s.seenIP[ip] {
		s.seenIP[ip] = true
		s.r.ips = append(s.r.ips, ip)
	}
	id, ok := s.c.local[ip]
	return id, ok
}

// report records a problem of the service.
func (s *serviceComputation) report(reason, format string, args ...any) {
	s.problems[Problem{Service: s.name, Reason: reason, Message: fmt.Sprintf(format, args...)}] = true
}

// result adds the remote endpoints the load balancers use and sorts what
// is reported.
func (s *serviceComputation) result() svcResult {
	r := s.r
	for _, lb := range r.lbs {
		for _, b := range lb.Backends {
			if !b.Local {
				s.remotes[b.IP] = s.candidates[b.IP]
			}
		}
	}
	for _, re := range s.remotes {
		r.remotes = append(r.remotes, re)
	}
	slices.SortFunc(r.remotes, func(a, b RemoteEndpoint) int { return a.IP.Compare(b.IP) })
	for p := range s.problems {
		r.problems = append(r.problems, p)
	}
	sortProblems(r.problems)
	return r
}

func sortProblems(ps []Problem) {
	slices.SortFunc(ps, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Reason, b.Reason), cmp.Compare(a.Message, b.Message))
	})
}
