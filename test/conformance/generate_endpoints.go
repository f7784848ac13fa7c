package conformance

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// makeSlices creates the service's slices: one or two per family.
func (g *gen) makeSlices(st *svcState, s *Step) {
	svc := st.svc
	st.distribution = g.trafficDistribution()
	fams := familiesOf(svc)
	if len(fams) == 0 {
		fams = []string{v4} // headless: slices of the primary family
	}
	// Pods serve every family of the service.
	var eps []epRef
	for range g.r.IntN(7) {
		e := g.newEndpoint()
		if !slices.ContainsFunc(eps, func(o epRef) bool { return o.p == e.p }) {
			eps = append(eps, e)
		}
	}
	for _, f := range fams {
		n := 1
		if g.pick(0.3) {
			n = 2
		}
		ports := g.slicePorts(svc)
		for j := range n {
			sl := &discoveryv1.EndpointSlice{
				ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: fmt.Sprintf("%s-%s-%d", svc.Name, f[2:], j),
					Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}},
				AddressType: discoveryv1.AddressType(f),
				Ports:       ports,
			}
			if j > 0 && g.pick(0.3) {
				// A rollout: the named target port resolves to another
				// number in the new pods' slice.
				sl.Ports = g.slicePorts(svc)
			}
			for i, e := range eps {
				if i%n == j {
					sl.Endpoints = append(sl.Endpoints, g.hinted(st, g.endpoint(e, f), e.p))
				}
			}
			plain := sl.DeepCopy()
			if j > 0 && len(st.slices) > 0 {
				g.maybeReuse(st.slices[len(st.slices)-1], sl)
			}
			g.maybeDuplicate(sl)
			if ambiguous(append(slices.Clone(st.slices), sl)) {
				sl = plain
			}
			st.slices = append(st.slices, sl)
			s.Slices = append(s.Slices, sl)
		}
	}
}

func (g *gen) slicePorts(svc *corev1.Service) []discoveryv1.EndpointPort {
	var out []discoveryv1.EndpointPort
	for _, p := range svc.Spec.Ports {
		port := p.TargetPort.IntVal
		if p.TargetPort.Type == intstr.String || g.pick(0.05) {
			port = []int32{8080, 8081, 9000}[g.r.IntN(3)]
		}
		out = append(out, discoveryv1.EndpointPort{Name: new(p.Name), Protocol: new(p.Protocol), Port: new(port)})
	}
	return out
}

// epRef is a pod in a slice, with its conditions.
type epRef struct {
	p    *pod
	cond conditions
}

type conditions struct{ ready, serving, terminating *bool }

// conditionSets are realistic endpoint states: ready; not ready (failing
// its probe); terminating while still serving; terminating and no longer
// serving; conditions unset (defaults: ready and serving).
var conditionSets = []conditions{
	{new(true), new(true), new(false)},
	{new(false), new(false), new(false)},
	{new(false), new(true), new(true)},
	{new(false), new(false), new(true)},
	{},
}

func (g *gen) conditions() conditions {
	switch x := g.r.IntN(100); {
	case x < 65:
		return conditionSets[0]
	case x < 75:
		return conditionSets[1]
	case x < 85:
		return conditionSets[2]
	case x < 95:
		return conditionSets[3]
	}
	return conditionSets[4]
}

// newEndpoint picks a backend: a new local or remote pod, a host-network
// pod, an address outside the cluster, or a pod another service uses.
func (g *gen) newEndpoint() epRef {
	e := epRef{cond: g.conditions()}
	switch x := g.r.IntN(100); {
	case x < 12 && len(g.pods) > 0:
		keys := sortedKeys(g.pods)
		e.p = g.pods[keys[g.r.IntN(len(keys))]]
	case x < 45:
		e.p = g.newPod(0)
	case x < 85:
		e.p = g.newPod(1 + g.r.IntN(g.nodes))
	case x < 93:
		k := g.r.IntN(g.nodes + 1)
		if k == 0 && g.pick(0.5) {
			k = 1
		}
		e.p = g.hostPod(k)
	default:
		g.public++
		key := fmt.Sprintf("public-%d", g.public)
		e.p = &pod{key: key, node: -1, ips: map[string]string{v4: fmt.Sprintf("198.51.100.%d", g.public%250+1), v6: addr("2001:db8:100::%x", g.public)}}
		g.pods[key] = e.p
	}
	return e
}

func (g *gen) newPod(k int) *pod {
	i := g.podSeq[k]
	g.podSeq[k]++
	p := &pod{key: fmt.Sprintf("pod-%d-%d", k, i), node: k, ips: map[string]string{v4: podIP(k, i+2, v4), v6: podIP(k, i+2, v6)}}
	g.pods[p.key] = p
	if k == 0 && g.pick(0.9) {
		if g.cur == nil {
			g.c.Endpoints = append(g.c.Endpoints, g.cniEndpoint(p))
		} else {
			g.cur.AddEndpoints = append(g.cur.AddEndpoints, g.cniEndpoint(p))
		}
	}
	return p
}

func (g *gen) hostPod(k int) *pod {
	key := fmt.Sprintf("host-%d", k)
	if p, ok := g.pods[key]; ok {
		return p
	}
	p := &pod{key: key, node: k, hostNet: true, ips: map[string]string{v4: nodeIP(k, v4), v6: nodeIP(k, v6)}}
	g.pods[key] = p
	return p
}

// cniEndpoint gives a local pod its HNS endpoint (a new name each time: the
// CNI names endpoints after the sandbox).
func (g *gen) cniEndpoint(p *pod) LocalEndpoint {
	g.epGen++
	p.cni = fmt.Sprintf("%s-ep%d", p.key, g.epGen)
	ep := LocalEndpoint{Name: p.cni, IPs: []string{p.ips[v4]}}
	if g.dual {
		ep.IPs = append(ep.IPs, p.ips[v6])
	}
	return ep
}

func (g *gen) endpoint(e epRef, fam string) discoveryv1.Endpoint {
	ep := discoveryv1.Endpoint{Addresses: []string{e.p.ips[fam]},
		Conditions: discoveryv1.EndpointConditions{Ready: e.cond.ready, Serving: e.cond.serving, Terminating: e.cond.terminating}}
	if e.p.node >= 0 {
		ep.NodeName = new(fmt.Sprintf("node-%d", e.p.node))
	}
	return ep
}

// trafficDistribution draws a service's: most have none.
func (g *gen) trafficDistribution() string {
	switch x := g.topo.IntN(100); {
	case x < 30:
		return corev1.ServiceTrafficDistributionPreferSameZone
	case x < 45:
		return corev1.ServiceTrafficDistributionPreferSameNode
	}
	return ""
}

// hinted gives an endpoint the hints the EndpointSlice controller writes
// for the service's trafficDistribution: its node's zone, and with
// PreferSameNode its node too. An address outside the cluster has no
// zone, and now and then an endpoint is not hinted yet; either makes
// kube-proxy ignore the port's hints.
func (g *gen) hinted(st *svcState, ep discoveryv1.Endpoint, p *pod) discoveryv1.Endpoint {
	if st.distribution == "" || p.node < 0 || g.topo.IntN(20) == 0 {
		return ep
	}
	ep.Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: zoneOf(p.node)}}}
	if st.distribution == corev1.ServiceTrafficDistributionPreferSameNode {
		ep.Hints.ForNodes = []discoveryv1.ForNode{{Name: fmt.Sprintf("node-%d", p.node)}}
	}
	return ep
}

// maybeDuplicate lists an address twice in a slice now and then: a new pod
// that got the IP of a terminating one.
func (g *gen) maybeDuplicate(sl *discoveryv1.EndpointSlice) {
	if len(sl.Endpoints) == 0 || !g.pick(0.08) {
		return
	}
	i := g.r.IntN(len(sl.Endpoints))
	dup := *sl.Endpoints[i].DeepCopy()
	c := g.conditions()
	dup.Conditions = discoveryv1.EndpointConditions{Ready: c.ready, Serving: c.serving, Terminating: c.terminating}
	at := g.r.IntN(len(sl.Endpoints) + 1)
	sl.Endpoints = slices.Insert(sl.Endpoints, at, dup)
}

// maybeReuse lists in sl, now and then, an address prev lists too: a new
// pod got a terminating pod's IP during a rollout, maybe listening on
// another port.
func (g *gen) maybeReuse(prev, sl *discoveryv1.EndpointSlice) {
	if len(prev.Endpoints) == 0 || !g.pick(0.15) {
		return
	}
	e := *prev.Endpoints[g.r.IntN(len(prev.Endpoints))].DeepCopy()
	c := g.conditions()
	e.Conditions = discoveryv1.EndpointConditions{Ready: c.ready, Serving: c.serving, Terminating: c.terminating}
	sl.Endpoints = append(sl.Endpoints, e)
}

// ambiguous reports whether kube-proxy's endpoint-slice cache would give a
// result that depends on the order it reads the service's slices in (a
// map's): for one address and port, entries that are not terminating in
// two slices, or only terminating entries in two slices. (Within a slice
// the order is fixed: the last non-terminating entry wins.)
func ambiguous(sls []*discoveryv1.EndpointSlice) bool {
	type key struct {
		fam, name string
		port      int32
		ip        string
	}
	running, terminating := map[key]map[int]bool{}, map[key]map[int]bool{}
	add := func(m map[key]map[int]bool, k key, i int) {
		if m[k] == nil {
			m[k] = map[int]bool{}
		}
		m[k][i] = true
	}
	for i, sl := range sls {
		for _, p := range sl.Ports {
			for _, e := range sl.Endpoints {
				k := key{string(sl.AddressType), deref(p.Name), deref(p.Port), e.Addresses[0]}
				if deref(e.Conditions.Terminating) {
					add(terminating, k, i)
				} else {
					add(running, k, i)
				}
			}
		}
	}
	for k, in := range running {
		if len(in) > 1 {
			return true
		}
		delete(terminating, k)
	}
	for _, in := range terminating {
		if len(in) > 1 {
			return true
		}
	}
	return false
}
