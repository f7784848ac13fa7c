package apply

import (
	"net/netip"
	"slices"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
)

// Rank is where the first sync of a start puts a Service's load balancers
// (docs/design/dataplane.md#the-first-sync-after-a-start). The values are
// public: do not change them.
type Rank string

// The ranks, in the order a first sync programs them.
const (
	// RankClusterDNS: the cluster's DNS Service (WithClusterDNS): until it
	// is programmed, no pod of the node resolves a name.
	RankClusterDNS Rank = "ClusterDNS"
	// RankAPIServer: default/kubernetes, the API server's ClusterIP, which
	// the node's controllers and operators reach first.
	RankAPIServer Rank = "APIServer"
	// RankLocalEndpoints: a Service with a backend on this node: its pods
	// are here, and so are, most likely, their clients.
	RankLocalEndpoints Rank = "LocalEndpoints"
	// RankOther: everything else, in the phases' order, after the ranks above.
	RankOther Rank = "Other"
)

// firstRanks are the ranks a first sync programs, each complete (its
// endpoints, then its load balancers), before the rest.
var firstRanks = []Rank{RankClusterDNS, RankAPIServer, RankLocalEndpoints}

const (
	// DefaultClusterDNS is the cluster DNS Service of kubeadm, AKS, EKS and
	// GKE: CoreDNS (or kube-dns) behind the ClusterIP every kubelet's
	// clusterDNS names.
	DefaultClusterDNS = "kube-system/kube-dns"
	// apiServerService is the API server's Service, in every cluster.
	apiServerService = "default/kubernetes"
)

// WithClusterDNS names (namespace/name) the Service a first sync programs
// before any other: the one the kubelets' clusterDNS points to. Default
// DefaultClusterDNS.
func WithClusterDNS(service string) Option { return func(a *Applier) { a.clusterDNS = service } }

// rank is where the first sync of a start puts lb.
func (a *Applier) rank(lb *engine.LoadBalancer) Rank {
	switch lb.Key.Service {
	case a.clusterDNS:
		return RankClusterDNS
	case apiServerService:
		return RankAPIServer
	}
	for _, b := range lb.Backends {
		if b.Local {
			return RankLocalEndpoints
		}
	}
	return RankOther
}

// firstPhases are the phases the first sync of a start (HNS empty after a
// reboot, or left by another proxy) runs after the local endpoints: for
// each of firstRanks, its remote endpoints, then its load balancers, so
// that DNS and the API server come within a few calls instead of wherever
// the key order puts them, and the node's own Services next. They make
// exactly the calls the phases after them would have made, in another
// order, and leave to those what they decide with everything in view: a
// load balancer HNS already holds, and one whose frontend a listed load
// balancer not yet matched holds (deleting or replacing that one is the
// load-balancer phase's). On any other sync they plan nothing.
func firstPhases() []func(*syncState) ([]op, error) {
	var out []func(*syncState) ([]op, error)
	for _, r := range firstRanks {
		out = append(out,
			func(s *syncState) ([]op, error) { return s.planFirstEndpoints(r), nil },
			func(s *syncState) ([]op, error) { return s.planFirstLoadBalancers(r) })
	}
	return out
}

// ordersFirst reports whether this sync runs the first phases: the first
// of a start, on an HNS that holds none of the agent's load balancers
// (empty after a reboot, or another proxy's). A restart that finds its own
// as it left them has nothing to order.
func (s *syncState) ordersFirst() bool {
	if s.order == orderUnknown {
		s.order = orderKept
		if s.a.starting && !slices.ContainsFunc(s.o.LoadBalancers, func(lb hns.LoadBalancer) bool { return s.a.owned.Ledger.Has(lb.ID) }) {
			s.order = orderFirst
		}
	}
	return s.order == orderFirst
}

// order is whether a sync runs the first phases, once decided.
type order uint8

const (
	orderUnknown order = iota
	orderFirst
	orderKept
)

// ranked are the wanted load balancers of rank r, in key order.
func (s *syncState) ranked(r Rank) []engine.LoadBalancer {
	var out []engine.LoadBalancer
	for _, lb := range s.d.LoadBalancers {
		if s.a.rank(&lb) == r {
			out = append(out, lb)
		}
	}
	sortLoadBalancers(out)
	return out
}

// planFirstEndpoints plans the remote endpoints the backends of rank r
// need, and marks them so that the remote-endpoint phase leaves them alone.
func (s *syncState) planFirstEndpoints(r Rank) []op {
	if !s.ordersFirst() {
		return nil
	}
	var todo []engine.RemoteEndpoint
	for _, lb := range s.ranked(r) {
		for _, b := range lb.Backends {
			if b.Local || s.firstEPs[b.IP] {
				continue
			}
			// Made only now: a backend seen already (one each port) costs no remote endpoint.
			want, ok := s.d.RemoteEndpoints.Get(b.IP)
			if !ok {
				continue
			}
			if s.firstEPs == nil {
				s.firstEPs = make(map[netip.Addr]bool, s.d.RemoteEndpoints.Len())
			}
			s.firstEPs[b.IP] = true
			if !s.matchRemote(want) {
				todo = append(todo, want)
			}
		}
	}
	return s.planRemoteEndpoints(todo)
}

// planFirstLoadBalancers plans the load balancers of rank r that HNS does
// not hold, once their endpoints exist, and marks them so that the
// load-balancer phase leaves them alone.
func (s *syncState) planFirstLoadBalancers(r Rank) ([]op, error) {
	if !s.ordersFirst() {
		return nil, nil
	}
	if err := s.matchRecorded(); err != nil {
		return nil, err
	}
	lbs := s.ranked(r)
	if err := s.matchByContent(s.unmappedOf(lbs)); err != nil {
		return nil, err
	}
	return s.planFirst(lbs), nil
}

// unmappedOf are those of lbs no listed load balancer is mapped to.
func (s *syncState) unmappedOf(lbs []engine.LoadBalancer) []engine.LoadBalancer {
	var out []engine.LoadBalancer
	for _, lb := range lbs {
		if _, ok := s.a.lbIDs[lb.Key]; !ok {
			out = append(out, lb)
		}
	}
	return out
}

// planFirst plans the load balancers of lbs the first sync programs now,
// and marks them so that the load-balancer phase leaves them alone.
func (s *syncState) planFirst(lbs []engine.LoadBalancer) []op {
	var ops []op
	var held map[hns.Frontend]bool
	noModify := s.a.noModify
	for i := range lbs {
		lb := &lbs[i]
		if s.programmed(*lb) {
			continue
		}
		if _, mapped := s.a.lbIDs[lb.Key]; !mapped {
			if held == nil {
				held = s.unclaimedFrontends()
			}
			if held[s.build(*lb).Frontend()] {
				continue
			}
		}
		var o op
		o, noModify = s.planLoadBalancer(lb, noModify)
		ops = append(ops, o)
		if s.first == nil {
			s.first = make(map[engine.LBKey]bool, len(s.d.LoadBalancers))
		}
		s.first[lb.Key] = true
	}
	return ops
}

// unclaimedFrontends are the frontends of the listed load balancers no
// wanted one is mapped to.
func (s *syncState) unclaimedFrontends() map[hns.Frontend]bool {
	out := map[hns.Frontend]bool{}
	for id, lb := range s.listedLB {
		if !s.claimed[id] {
			out[lb.Frontend()] = true
		}
	}
	return out
}
