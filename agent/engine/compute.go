package engine

import (
	"cmp"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Compute is the engine as one pure function. It computes every service
// once and merges the results by the rules of merge.go, without the
// bookkeeping Incremental keeps to recompute only what changed; the result
// equals an Incremental's fed the same inputs (a later service or slice
// with the same namespace and name replaces an earlier one).
func Compute(in Input) *Desired {
	ctx := newNodeContext(in.NodeName, &in.Config, in.Node, in.Nodes, &in.HNS)
	services := latestServices(in.Services)
	slicesOf := slicesByService(in.EndpointSlices)
	sc := newServiceComputer(ctx, false)
	m := newMerge(estimateSizes(services, slicesOf, len(ctx.families)))
	for _, svc := range services {
		name := svc.Namespace + "/" + svc.Name
		m.add(name, sc.compute(name, svc, slicesOf[objectKey{svc.Namespace, svc.Name}]))
	}
	d := m.finish()
	d.Effective = ctx.effective
	d.SourceVIPEndpoint = ctx.svipEndpoint
	d.nodeProblems = ctx.problems
	return d
}

// estimateSizes sizes the Desired's maps so that they need not grow: a load
// balancer per service port and family, a remote endpoint per endpoint and
// family and a service VIP per service (an overestimate where services
// share endpoints or have none).
func estimateSizes(services []*corev1.Service, slicesOf map[objectKey][]*discoveryv1.EndpointSlice, families int) (lbs, remotes int) {
	for _, svc := range services {
		lbs += len(svc.Spec.Ports) * families
		remotes += families
	}
	for _, group := range slicesOf {
		for _, s := range group {
			remotes += len(s.Endpoints)
		}
	}
	return lbs, remotes
}

// objectKey is a namespaced name, a map key that needs no string built.
type objectKey struct{ namespace, name string }

// latestServices keeps the last service of each namespace and name.
func latestServices(in []*corev1.Service) []*corev1.Service {
	seen := make(map[objectKey]int, len(in))
	out := make([]*corev1.Service, 0, len(in))
	for _, s := range in {
		k := objectKey{s.Namespace, s.Name}
		if i, dup := seen[k]; dup {
			out[i] = s
			continue
		}
		seen[k] = len(out)
		out = append(out, s)
	}
	return out
}

// slicesByService groups the slices by the service they label (the last
// slice of each namespace and name counts), each group sorted by name.
func slicesByService(in []*discoveryv1.EndpointSlice) map[objectKey][]*discoveryv1.EndpointSlice {
	latest := make(map[objectKey]*discoveryv1.EndpointSlice, len(in))
	for _, s := range in {
		latest[objectKey{s.Namespace, s.Name}] = s
	}
	out := make(map[objectKey][]*discoveryv1.EndpointSlice, len(latest))
	for k, s := range latest {
		if svc := s.Labels[discoveryv1.LabelServiceName]; svc != "" {
			sk := objectKey{k.namespace, svc}
			out[sk] = append(out[sk], s)
		}
	}
	for _, group := range out {
		if len(group) > 1 {
			slices.SortFunc(group, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
		}
	}
	return out
}

// merge builds a Desired from every service's result at once.
type merge struct {
	d *Desired
	// sharer is, for each shared (health-check) LB, the service whose
	// settings it has so far.
	sharer map[LBKey]string
	front  map[frontKey]LBKey
	// contested lists the keys of each frontend claimed more than once.
	contested map[frontKey][]LBKey
}

func newMerge(lbs, remotes int) *merge {
	return &merge{
		d: &Desired{
			LoadBalancers:   make(map[LBKey]LoadBalancer, lbs),
			RemoteEndpoints: make(map[netip.Addr]RemoteEndpoint, remotes),
			svcProblems:     map[string][]Problem{},
			conflicts:       map[LBKey]Problem{},
		},
		sharer: map[LBKey]string{},
		front:  make(map[frontKey]LBKey, lbs),
	}
}

// add merges a service's result; it keeps none of what r borrows.
func (m *merge) add(service string, r svcResult) {
	if len(r.problems) > 0 {
		m.d.svcProblems[service] = slices.Clone(r.problems)
	}
	for _, lb := range r.lbs {
		m.addLB(service, lb)
	}
	for _, re := range r.remotes {
		if re.ServiceVIP {
			// One lookup more, and only for service VIPs: a backend's
			// endpoint always wins (preferRemote).
			if cur, ok := m.d.RemoteEndpoints[re.IP]; ok && !preferRemote(cur, re) {
				continue
			}
		}
		m.d.RemoteEndpoints[re.IP] = re
	}
}

func (m *merge) addLB(service string, lb LoadBalancer) {
	k := lb.Key
	if k.Service == "" {
		if s, ok := m.sharer[k]; ok && s < service {
			return
		}
		m.sharer[k] = service
	}
	m.d.LoadBalancers[k] = lb
	fk := frontOf(k)
	w, ok := m.front[fk]
	switch {
	case !ok:
		m.front[fk] = k
	case w != k:
		if m.contested == nil {
			m.contested = map[frontKey][]LBKey{}
		}
		keys := m.contested[fk]
		if len(keys) == 0 {
			keys = []LBKey{w}
		}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
		m.contested[fk] = keys
	}
}

// finish leaves out the losers of contested frontends.
func (m *merge) finish() *Desired {
	for _, keys := range m.contested {
		winner := frontendWinner(keys)
		for _, k := range keys[1:] {
			delete(m.d.LoadBalancers, k)
			svc := k.Service
			if svc == "" {
				svc = m.sharer[k]
			}
			m.d.conflicts[k] = conflictProblem(k, winner, svc)
		}
	}
	return m.d
}
