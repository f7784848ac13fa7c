package engine

import (
	"cmp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Compute is the engine as one pure function. It computes every service
// once and merges the results by the rules of merge.go, without the
// bookkeeping Incremental keeps to recompute only what changed; the result
// equals an Incremental's fed the same inputs (a later service or slice
// with the same namespace and name replaces an earlier one).
func Compute(in Input) *Desired {
	ni := newNodeInputs(in.NodeName, &in.Config, in.Node, &in.HNS)
	ni.nodeCIDRs = nodeCIDRsOf(in.Nodes, in.NodeName)
	ctx := newNodeContext(ni, &in.Config, &in.HNS, nil)
	services := servicesOf(latest(in.Services))
	bySvc := slicesByService(latest(in.EndpointSlices))
	sc := newServiceComputer(ctx, false)
	m := newMerge(estimateSizes(services, bySvc, len(ctx.families)))
	// Both are sorted by namespace and (service) name: each service's
	// slices are the next run of bySvc.
	var own []*Slice // reused: compute keeps none
	for _, svc := range services {
		for len(bySvc) > 0 && compareKeys(bySvc[0].key, svc.key) < 0 {
			bySvc = bySvc[1:]
		}
		own = own[:0]
		for len(bySvc) > 0 && bySvc[0].key == svc.key {
			own, bySvc = append(own, bySvc[0].obj), bySvc[1:]
		}
		name := svc.key.namespace + "/" + svc.key.name
		m.add(name, sc.compute(name, svc.obj, own))
	}
	d := m.finish()
	d.Effective = ctx.effective
	d.Effective.TopologyRoutedServices = m.topologyRouted
	d.SourceVIPEndpoint = ctx.svipEndpoint
	d.nodeProblems = ctx.problems
	return d
}

// estimateSizes sizes the Desired's maps so that they need not grow: a load
// balancer per service port and family, a remote endpoint per endpoint and
// a service VIP per service and family (an overestimate where services
// share endpoints or have none).
func estimateSizes(services []keyed[*Service], slices []keyed[*Slice], families int) (lbs, remotes int) {
	for _, svc := range services {
		lbs += len(svc.obj.Ports) * families
		remotes += families
	}
	for _, s := range slices {
		remotes += len(s.obj.Endpoints)
	}
	return lbs, remotes
}

// objectKey is a namespaced name.
type objectKey struct{ namespace, name string }

func compareKeys(a, b objectKey) int {
	return cmp.Or(strings.Compare(a.namespace, b.namespace), strings.Compare(a.name, b.name))
}

// keyed is an object with a key to sort it by.
type keyed[T any] struct {
	key objectKey
	obj T
}

// namespaced are the objects Compute reads.
type namespaced interface {
	*corev1.Service | *discoveryv1.EndpointSlice
	GetNamespace() string
	GetName() string
}

// latest keeps, of the objects with the same namespace and name, the last
// in the input, and sorts them by namespace and name. Sorting is cheaper
// than a map of 10,000 names.
func latest[T namespaced](in []T) []keyed[T] {
	type indexed struct {
		keyed[T]
		i int
	}
	all := make([]indexed, len(in))
	for i, o := range in {
		all[i] = indexed{keyed[T]{objectKey{o.GetNamespace(), o.GetName()}, o}, i}
	}
	slices.SortFunc(all, func(a, b indexed) int { return cmp.Or(compareKeys(a.key, b.key), cmp.Compare(a.i, b.i)) })
	out := make([]keyed[T], 0, len(all))
	for i, o := range all {
		if i+1 < len(all) && all[i+1].key == o.key {
			continue // a later one replaces it
		}
		out = append(out, o.keyed)
	}
	return out
}

// servicesOf reads the services into the engine's form.
func servicesOf(in []keyed[*corev1.Service]) []keyed[*Service] {
	out := make([]keyed[*Service], len(in))
	for i, svc := range in {
		out[i] = keyed[*Service]{svc.key, ServiceOf(svc.obj)}
	}
	return out
}

// slicesByService reads the slices into the engine's form, keyed by the
// service they label instead (those without the label belong to none),
// sorted by namespace, service and name.
func slicesByService(in []keyed[*discoveryv1.EndpointSlice]) []keyed[*Slice] {
	labelled := make([]*discoveryv1.EndpointSlice, 0, len(in))
	for _, es := range in {
		if es.obj.Labels[discoveryv1.LabelServiceName] != "" {
			labelled = append(labelled, es.obj)
		}
	}
	read := slicesOf(labelled)
	out := make([]keyed[*Slice], len(read))
	for i := range read {
		s := &read[i]
		out[i] = keyed[*Slice]{objectKey{s.Namespace, s.Service}, s}
	}
	// Stable: slices of one service stay sorted by name.
	slices.SortStableFunc(out, func(a, b keyed[*Slice]) int { return compareKeys(a.key, b.key) })
	return out
}

// merge builds a Desired from every service's result at once.
type merge struct {
	d *Desired
	// sharer is, for each shared (health-check) LB, the service whose
	// settings it has so far.
	sharer map[LBKey]string
	front  map[frontKey]LBKey
	// remotes is d's remote endpoints.
	remotes RemoteEndpointMap
	// contested lists the keys of each frontend claimed more than once.
	contested map[frontKey][]LBKey
	// topologyRouted counts the services routed by topology.
	topologyRouted int
}

func newMerge(lbs, nRemotes int) *merge {
	remotes := make(RemoteEndpointMap, nRemotes)
	return &merge{
		remotes: remotes,
		d: &Desired{
			LoadBalancers:   make(map[LBKey]LoadBalancer, lbs),
			RemoteEndpoints: remotes,
			svcProblems:     map[string][]Problem{},
			reasons:         map[string]int{},
			conflicts:       map[LBKey]Problem{},
		},
		sharer: map[LBKey]string{},
		front:  make(map[frontKey]LBKey, lbs),
	}
}

// add merges a service's result; it keeps none of what r borrows.
func (m *merge) add(service string, r svcResult) {
	m.d.setProblems(service, r.problems)
	if r.topologyRouted {
		m.topologyRouted++
	}
	for _, lb := range r.lbs {
		m.addLB(service, lb)
	}
	for _, re := range r.remotes {
		if re.ServiceVIP {
			// One lookup more, and only for service VIPs: a backend's
			// endpoint always wins (preferRemote).
			if cur, ok := m.remotes[re.IP]; ok && !preferRemote(cur, re) {
				continue
			}
		}
		m.remotes[re.IP] = re
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
