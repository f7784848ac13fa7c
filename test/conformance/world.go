package conformance

import (
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// role is what a frontend is for: a kind of LB of a service port.
type role struct {
	Service string // namespace/name
	Port    string
	Kind    string // clusterip, nodeport, externalip, ingress, healthcheck
}

// stepCtx is what the allow-list's predicates may look at for one step:
// the three canonical states, the objects, and what the scenario did so far.
type stepCtx struct {
	o    *outcome
	step int
	up   Canon
	win  Canon
	// err is the first error of a fresh upstream run.
	err error
	// services and slices as of this step.
	services map[string]*corev1.Service
	slices   map[string]*discoveryv1.EndpointSlice
	roles    map[Frontend][]role
	// addresses listed by the slices of the proxied services, by family.
	addresses map[string]bool
	// sharedHC: health-check frontends two services claimed at once, at
	// this step or before.
	sharedHC map[Frontend]bool
	// cniCreated: addresses of the local endpoints the CNI created while the
	// proxy ran (after the first step), up to this step.
	cniCreated map[string]bool
	// restarts are the steps at which the proxy restarted, up to this one;
	// listedAt the addresses listed at each step.
	restarts []int
	listedAt []map[string]bool
}

// world replays a cluster's steps for the classifier.
type world struct {
	c        *Cluster
	services map[string]*corev1.Service
	slices   map[string]*discoveryv1.EndpointSlice
	sharedHC map[Frontend]bool
	restarts []int
	created  map[string]bool
	listedAt []map[string]bool
}

func newWorld(c *Cluster) *world {
	return &world{c: c, services: map[string]*corev1.Service{}, slices: map[string]*discoveryv1.EndpointSlice{},
		sharedHC: map[Frontend]bool{}, created: map[string]bool{}}
}

// advance applies step i and returns the predicates' view of it.
func (w *world) advance(o *outcome, i int) *stepCtx {
	s := &w.c.Steps[i]
	for _, svc := range s.Services {
		w.services[svc.Namespace+"/"+svc.Name] = svc
	}
	for _, k := range s.DeleteServices {
		delete(w.services, k)
	}
	for _, sl := range s.Slices {
		w.slices[sl.Namespace+"/"+sl.Name] = sl
	}
	for _, k := range s.DeleteSlices {
		delete(w.slices, k)
	}
	if s.Restart {
		w.restarts = append(w.restarts, i)
	}
	for _, ep := range s.AddEndpoints {
		w.created[strings.Join(sortedIPs(ep.IPs), ",")] = true
	}
	x := &stepCtx{o: o, step: i, up: o.Up[i], win: o.Win[i],
		services: w.services, slices: w.slices, roles: rolesOf(w.c, w.services),
		addresses: map[string]bool{}, sharedHC: w.sharedHC, restarts: w.restarts, cniCreated: w.created}
	for f, rs := range x.roles {
		n := 0
		for _, r := range rs {
			if r.Kind == "healthcheck" {
				n++
			}
		}
		if n > 1 {
			w.sharedHC[f] = true
		}
	}
	for _, sl := range w.slices {
		svc := w.services[sl.Namespace+"/"+sl.Labels[discoveryv1.LabelServiceName]]
		if svc == nil || !proxied(svc) {
			continue
		}
		for _, e := range sl.Endpoints {
			if len(e.Addresses) > 0 {
				x.addresses[canonIP(e.Addresses[0])] = true
			}
		}
	}
	w.listedAt = append(w.listedAt, x.addresses)
	x.listedAt = w.listedAt
	return x
}

func proxied(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

// rolesOf maps the frontends the services claim to their roles
// (docs/design/dataplane.md#load-balancers), for the families the node
// proxies.
func rolesOf(c *Cluster, services map[string]*corev1.Service) map[Frontend][]role {
	out := map[Frontend][]role{}
	for _, k := range sortedKeys(services) {
		svc := services[k]
		if !proxied(svc) {
			continue
		}
		for _, fam := range c.Families {
			short := "v4"
			if fam == v6 {
				short = "v6"
			}
			inFam := func(ips []string) []string {
				var o []string
				for _, ip := range ips {
					if a, err := netip.ParseAddr(ip); err == nil && a.Is6() == (fam == v6) {
						o = append(o, a.String())
					}
				}
				return o
			}
			cips := inFam(svc.Spec.ClusterIPs)
			if len(cips) == 0 {
				continue
			}
			var ingress []string
			for _, ing := range svc.Status.LoadBalancer.Ingress {
				if ing.IPMode == nil || *ing.IPMode == corev1.LoadBalancerIPModeVIP {
					ingress = append(ingress, ing.IP)
				}
			}
			ingress = inFam(ingress)
			hc := c.HealthzPort
			if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort != 0 {
				hc = int(svc.Spec.HealthCheckNodePort)
			}
			for _, p := range svc.Spec.Ports {
				proto := protoNumber(p.Protocol)
				add := func(vip string, port int, kind string) {
					f := Frontend{Family: short, VIP: vip, Protocol: proto, Port: uint16(port)}
					out[f] = append(out[f], role{Service: k, Port: p.Name, Kind: kind})
				}
				add(cips[0], int(p.Port), "clusterip")
				if p.NodePort != 0 {
					add("", int(p.NodePort), "nodeport")
				}
				for _, ip := range inFam(svc.Spec.ExternalIPs) {
					add(ip, int(p.Port), "externalip")
				}
				for _, ip := range ingress {
					add(ip, int(p.Port), "ingress")
					add(ip, hc, "healthcheck")
				}
			}
		}
	}
	return out
}

func protoNumber(p corev1.Protocol) uint32 {
	switch p {
	case corev1.ProtocolUDP:
		return 17
	case corev1.ProtocolSCTP:
		return 132
	}
	return 6
}

// hasRole reports whether the frontend serves an LB of one of the kinds.
func (x *stepCtx) hasRole(f Frontend, kinds ...string) bool {
	return slices.ContainsFunc(x.roles[f], func(r role) bool { return slices.Contains(kinds, r.Kind) })
}

// fresh is upstream restarted at this step (see outcome.Fresh).
func (x *stepCtx) fresh() Canon {
	c, err := x.o.Fresh(x.step)
	if err != nil && x.err == nil {
		x.err = err
	}
	return c
}

// freshLB is upstream's fresh LB at a frontend (nil if none or several).
func (x *stepCtx) freshLB(f Frontend) *CanonLB {
	if lbs := x.fresh().LBs[f]; len(lbs) == 1 {
		return &lbs[0]
	}
	return nil
}

// winLB is winproxy's LB at a frontend (nil if none or several).
func (x *stepCtx) winLB(f Frontend) *CanonLB {
	if lbs := x.win.LBs[f]; len(lbs) == 1 {
		return &lbs[0]
	}
	return nil
}

// winMatchesFresh reports whether winproxy's LB at f is upstream's fresh
// one, but for the differences that upstream's history has no part in.
func (x *stepCtx) winMatchesFresh(f Frontend) bool {
	fr, w := x.freshLB(f), x.winLB(f)
	if fr == nil || w == nil {
		return false
	}
	fresh := Canon{LBs: map[Frontend][]CanonLB{f: {*fr}}}
	win := Canon{LBs: map[Frontend][]CanonLB{f: {*w}}}
	for _, a := range atomize(x.step, compare(fresh, win)) {
		if !slices.ContainsFunc(allowList, func(d difference) bool { return d.stateless && d.explains(x, &a) }) {
			return false
		}
	}
	return true
}
