package conformance

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// change draws the next step: one to three changes, sometimes a restart.
func (g *gen) change(s *Step) {
	for range 1 + g.r.IntN(3) {
		switch x := g.r.IntN(100); {
		case x < 30:
			g.changeEndpoints(s)
		case x < 45:
			g.editSomeService(s)
		case x < 55:
			g.addService(s)
		case x < 63:
			g.deleteService(s)
		case x < 75:
			g.cniCatchesUp(s)
		case x < 85:
			g.cniRecreates(s)
		default:
			g.deletePod(s)
		}
	}
	s.Restart = g.pick(0.12)
}

// adding reports whether the step creates the endpoint name.
func adding(s *Step, name string) bool {
	return slices.ContainsFunc(s.AddEndpoints, func(e LocalEndpoint) bool { return e.Name == name })
}

// someSlice picks a slice, or nil.
func (g *gen) someSlice() (*svcState, int) {
	var cands []*svcState
	for _, k := range sortedKeys(g.services) {
		if len(g.services[k].slices) > 0 {
			cands = append(cands, g.services[k])
		}
	}
	if len(cands) == 0 {
		return nil, 0
	}
	st := cands[g.r.IntN(len(cands))]
	return st, g.r.IntN(len(st.slices))
}

// changeEndpoints changes a slice: conditions flip, endpoints come and go.
func (g *gen) changeEndpoints(s *Step) {
	st, i := g.someSlice()
	if st == nil {
		return
	}
	sl := st.slices[i].DeepCopy()
	fam := string(sl.AddressType)
	switch x := g.r.IntN(3); {
	case x == 0 && len(sl.Endpoints) > 0:
		j := g.r.IntN(len(sl.Endpoints))
		c := g.conditions()
		sl.Endpoints[j].Conditions = discoveryv1.EndpointConditions{Ready: c.ready, Serving: c.serving, Terminating: c.terminating}
	case x == 1 && len(sl.Endpoints) > 0:
		j := g.r.IntN(len(sl.Endpoints))
		sl.Endpoints = slices.Delete(sl.Endpoints, j, j+1)
	default:
		e := g.newEndpoint()
		if e.p.ips[fam] != "" {
			sl.Endpoints = append(sl.Endpoints, g.hinted(st, g.endpoint(e, fam), e.p))
		}
	}
	next := slices.Clone(st.slices)
	next[i] = sl
	if ambiguous(next) {
		return
	}
	st.slices[i] = sl
	s.Slices = append(s.Slices, sl)
}

func (g *gen) editSomeService(s *Step) {
	keys := sortedKeys(g.services)
	if len(keys) == 0 {
		return
	}
	st := g.services[keys[g.r.IntN(len(keys))]]
	if st.svc.Spec.ClusterIP == "" || st.svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return
	}
	svc := st.svc.DeepCopy()
	g.releaseFrontends(st.svc)
	g.editService(svc, false)
	st.svc = svc
	s.Services = append(s.Services, svc)
}

func (g *gen) deleteService(s *Step) {
	keys := sortedKeys(g.services)
	if len(keys) == 0 {
		return
	}
	k := keys[g.r.IntN(len(keys))]
	st := g.services[k]
	g.releaseFrontends(st.svc)
	delete(g.services, k)
	s.DeleteServices = append(s.DeleteServices, k)
	for _, sl := range st.slices {
		s.DeleteSlices = append(s.DeleteSlices, sl.Namespace+"/"+sl.Name)
	}
}

// cniCatchesUp creates the HNS endpoint of a local pod that had none.
func (g *gen) cniCatchesUp(s *Step) {
	for _, k := range sortedKeys(g.pods) {
		p := g.pods[k]
		if p.node == 0 && !p.hostNet && p.cni == "" {
			s.AddEndpoints = append(s.AddEndpoints, g.cniEndpoint(p))
			return
		}
	}
}

// cniRecreates replaces a local pod's HNS endpoint by a new one with the
// same address (a sandbox restart): LBs must follow the new ID.
func (g *gen) cniRecreates(s *Step) {
	var cands []*pod
	for _, k := range sortedKeys(g.pods) {
		if p := g.pods[k]; p.cni != "" && !adding(s, p.cni) {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return
	}
	p := cands[g.r.IntN(len(cands))]
	s.RemoveEndpoints = append(s.RemoveEndpoints, p.cni)
	s.AddEndpoints = append(s.AddEndpoints, g.cniEndpoint(p))
}

// deletePod removes a pod from every slice; a local pod's HNS endpoint goes
// with it.
func (g *gen) deletePod(s *Step) {
	keys := sortedKeys(g.pods)
	if len(keys) == 0 {
		return
	}
	p := g.pods[keys[g.r.IntN(len(keys))]]
	if p.hostNet || p.node < 0 {
		return
	}
	// The new slices first: a deletion that would leave upstream's answer
	// to map order is not made.
	type update struct {
		st *svcState
		i  int
		sl *discoveryv1.EndpointSlice
	}
	var updates []update
	for _, k := range sortedKeys(g.services) {
		st := g.services[k]
		next := slices.Clone(st.slices)
		for i, sl := range st.slices {
			ip := p.ips[string(sl.AddressType)]
			if !slices.ContainsFunc(sl.Endpoints, func(e discoveryv1.Endpoint) bool { return e.Addresses[0] == ip }) {
				continue
			}
			n := sl.DeepCopy()
			n.Endpoints = slices.DeleteFunc(n.Endpoints, func(e discoveryv1.Endpoint) bool { return e.Addresses[0] == ip })
			next[i] = n
			updates = append(updates, update{st, i, n})
		}
		if ambiguous(next) {
			return
		}
	}
	for _, u := range updates {
		u.st.slices[u.i] = u.sl
		s.Slices = append(s.Slices, u.sl)
	}
	delete(g.pods, p.key)
	switch {
	case p.cni == "":
	case adding(s, p.cni):
		// Created in this very step: it is simply never created.
		s.AddEndpoints = slices.DeleteFunc(s.AddEndpoints, func(e LocalEndpoint) bool { return e.Name == p.cni })
	default:
		s.RemoveEndpoints = append(s.RemoveEndpoints, p.cni)
	}
}
