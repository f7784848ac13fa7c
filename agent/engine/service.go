package engine

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
)

// svcResult is one service's contribution to Desired. The one compute
// returns borrows the computer's scratch space for remotes, problems and
// ips until the next compute.
type svcResult struct {
	lbs      []LoadBalancer
	remotes  []RemoteEndpoint
	problems []Problem
	// ips are the addresses looked up among local HNS endpoints: when one of
	// them changes, the service must be recomputed.
	ips []netip.Addr
	// topologyRouted: a port's cluster set follows topology hints.
	// readsZone: the result depends on the node's zone, so the service
	// must be recomputed when it changes.
	topologyRouted, readsZone bool
}

// serviceComputer computes services one after another for one node
// context. Its scratch space (a port's endpoints and plan, the remote
// endpoints and problems found so far) is reused from one service to the
// next; what it returns shares none of it.
type serviceComputer struct {
	c *nodeContext
	// trackIPs records in each result the addresses looked up among local
	// HNS endpoints, which the incremental engine recomputes services by.
	trackIPs bool

	// The service being computed.
	name   string // namespace/name
	policy servicePolicy
	lbs    []LoadBalancer
	// remotes are the service-VIP endpoints, which are always wanted, and
	// the remote endpoints of backends a load balancer uses (winkernel
	// creates them for every processed backend, e.g. for an ITP=Local
	// ClusterIP-only service too; docs/differences-from-kube-proxy.md).
	remotes   []RemoteEndpoint
	problems  []Problem
	ips       []netip.Addr
	plan      portPlan
	endpoints []endpoint
	macs      []byte
	// inTopology is selectBackends' scratch: which backends of a port are
	// in the topology.
	inTopology []bool
	// topologyRouted and readsZone are svcResult's.
	topologyRouted, readsZone bool
}

func newServiceComputer(c *nodeContext, trackIPs bool) *serviceComputer {
	return &serviceComputer{c: c, trackIPs: trackIPs}
}

// compute is the per-service part of the engine: a pure function of the
// node context, the service (named "namespace/name") and its EndpointSlices
// (sorted by name). For each family and port it selects the backends and
// programs the table of LB kinds (lbKinds).
func (s *serviceComputer) compute(name string, svc *Service, eps []*Slice) svcResult {
	c := s.c
	if !c.programmable || !svc.Proxied {
		return svcResult{}
	}
	s.name, s.lbs = name, nil
	s.remotes, s.problems, s.ips = s.remotes[:0], s.problems[:0], s.ips[:0]
	s.topologyRouted, s.readsZone = false, false
	s.policy = s.readPolicy(svc)
	p := &s.plan
	for _, fam := range c.families {
		clusterIP, ok := svc.clusterIP(fam)
		if !ok {
			continue
		}
		*p = portPlan{family: fam, clusterIP: [1]netip.Addr{clusterIP}, ingress: s.ingressIPs(svc, fam),
			root: c.rootBackends[familyIndex(fam)], policy: &s.policy}
		if c.externalIPs {
			p.externalIPs = addrsOf(svc.ExternalIPs, fam)
		}
		s.serviceVIPEndpoint(p)
		for _, sp := range svc.Ports {
			p.port, p.protocol = sp, protocolNumber(sp.Protocol)
			s.programPort(p, eps)
		}
	}
	return s.result()
}

// programPort selects the port's backends and programs every LB kind. Its
// remote backends' endpoints are kept only if a load balancer uses them.
func (s *serviceComputer) programPort(p *portPlan, eps []*Slice) {
	candidates, first := len(s.remotes), len(s.lbs)
	s.selectBackends(p, eps)
	if len(p.all) == 0 {
		// No backend, no load balancer of any kind.
		return
	}
	for i := range lbKinds {
		s.lbs = lbKinds[i].loadBalancers(s.lbs, s.name, p)
	}
	if !anyRemoteBackend(s.lbs[first:]) {
		s.remotes = s.remotes[:candidates]
	}
}

func anyRemoteBackend(lbs []LoadBalancer) bool {
	for _, lb := range lbs {
		for _, b := range lb.Backends {
			if !b.Local {
				return true
			}
		}
	}
	return false
}

// serviceVIPEndpoint asks for the endpoint winkernel gives every ClusterIP
// of an overlay network (host MAC, PA = node IP) unless one holds it
// already.
func (s *serviceComputer) serviceVIPEndpoint(p *portPlan) {
	c, ip := s.c, p.clusterIP[0]
	if !c.overlay {
		return
	}
	if _, held := s.lookup(ip); !held {
		s.remotes = append(s.remotes, c.serviceVIPEndpoint(ip))
	}
}

// serviceVIPEndpoint is the remote endpoint of a ClusterIP on overlay.
func (c *nodeContext) serviceVIPEndpoint(ip netip.Addr) RemoteEndpoint {
	return RemoteEndpoint{IP: ip, MAC: c.hostMAC, ProviderAddress: c.nodeIP[familyIndex(familyOf(ip))], ServiceVIP: true}
}

// lookup finds the local HNS endpoint holding ip, remembering that the
// service depends on it.
func (s *serviceComputer) lookup(ip netip.Addr) (string, bool) {
	if s.trackIPs {
		s.ips = append(s.ips, ip)
	}
	id, ok := s.c.local[ip]
	return id, ok
}

// report records a problem of the service.
func (s *serviceComputer) report(reason, format string, args ...any) {
	s.problems = append(s.problems, Problem{Service: s.name, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// result is the service's contribution, sorted and without duplicates:
// one remote endpoint per address (a backend's rather than a service
// VIP's), each problem and looked-up address once.
func (s *serviceComputer) result() svcResult {
	r := svcResult{lbs: s.lbs, topologyRouted: s.topologyRouted, readsZone: s.readsZone}
	if len(s.remotes) > 1 {
		slices.SortFunc(s.remotes, func(a, b RemoteEndpoint) int {
			return cmp.Or(a.IP.Compare(b.IP), boolOrder(a.ServiceVIP, b.ServiceVIP))
		})
		s.remotes = slices.CompactFunc(s.remotes, func(a, b RemoteEndpoint) bool { return a.IP == b.IP })
	}
	if len(s.problems) > 1 {
		sortProblems(s.problems)
		s.problems = slices.Compact(s.problems)
	}
	if len(s.ips) > 1 {
		slices.SortFunc(s.ips, netip.Addr.Compare)
		s.ips = slices.Compact(s.ips)
	}
	r.remotes, r.problems, r.ips = s.remotes, s.problems, s.ips
	return r
}

// boolOrder orders false before true.
func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

func sortProblems(ps []Problem) {
	slices.SortFunc(ps, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Reason, b.Reason), cmp.Compare(a.Message, b.Message))
	})
}
