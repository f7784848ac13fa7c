package conformance

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Differences are split into atoms, the smallest things that can differ:
// a load balancer that one side lacks, one field of a load balancer, one
// backend, one remote or created endpoint, a start-up error. Each atom must
// be explained by one entry of the allow-list (differences.go).

type atomKind string

const (
	atomError   atomKind = "start-up"
	atomLB      atomKind = "load balancer"
	atomField   atomKind = "field"
	atomBackend atomKind = "backend"
	atomRemote  atomKind = "remote endpoint"
	atomCreated atomKind = "created local endpoint"
)

type atom struct {
	Step     int
	Kind     atomKind
	Frontend Frontend
	Field    string // atomField
	IP       string // atomRemote, atomCreated
	// Up and Win render each side's value; "" when that side has none.
	Up, Win string
}

func (a atom) String() string {
	val := func(s string) string {
		if s == "" {
			return "(none)"
		}
		return s
	}
	switch a.Kind {
	case atomLB:
		return fmt.Sprintf("LB %s: upstream %s; winproxy %s", a.Frontend, val(a.Up), val(a.Win))
	case atomField:
		return fmt.Sprintf("LB %s %s: upstream %s, winproxy %s", a.Frontend, a.Field, val(a.Up), val(a.Win))
	case atomBackend:
		return fmt.Sprintf("LB %s backend: upstream %s, winproxy %s", a.Frontend, val(a.Up), val(a.Win))
	case atomRemote, atomCreated:
		return fmt.Sprintf("%s %s: upstream %s, winproxy %s", a.Kind, a.IP, val(a.Up), val(a.Win))
	}
	return fmt.Sprintf("%s: upstream %s, winproxy %s", a.Kind, val(a.Up), val(a.Win))
}

// atomize splits a step's differences into atoms.
func atomize(step int, diffs []Diff) []atom {
	var out []atom
	eps := func(e []CanonEP) string {
		var s []string
		for _, x := range e {
			s = append(s, x.String())
		}
		return strings.Join(s, "; ")
	}
	for _, d := range diffs {
		a := atom{Step: step, Frontend: d.Frontend, IP: d.IP}
		switch d.Kind {
		case DiffError:
			a.Kind, a.Up, a.Win = atomError, d.UpErr, d.WinErr
			out = append(out, a)
		case DiffLBUpstreamOnly:
			a.Kind, a.Up = atomLB, d.Up.String()
			out = append(out, a)
		case DiffLBWinproxyOnly:
			a.Kind, a.Win = atomLB, d.Win.String()
			out = append(out, a)
		case DiffLB:
			for _, f := range d.Fields {
				if f == "backends" {
					out = append(out, backendAtoms(a, d.Up.Backends, d.Win.Backends)...)
					continue
				}
				b := a
				b.Kind, b.Field = atomField, f
				b.Up, b.Win = fieldValue(*d.Up, f), fieldValue(*d.Win, f)
				out = append(out, b)
			}
		case DiffRemoteUpstreamOnly, DiffRemoteWinproxyOnly, DiffRemote:
			a.Kind, a.Up, a.Win = atomRemote, eps(d.UpEP), eps(d.WinEP)
			out = append(out, a)
		case DiffCreated:
			a.Kind, a.Up, a.Win = atomCreated, eps(d.UpEP), eps(d.WinEP)
			out = append(out, a)
		}
	}
	return out
}

func fieldValue(lb CanonLB, field string) string {
	switch field {
	case "internalPort":
		return strconv.Itoa(int(lb.InternalPort))
	case "flags":
		return strconv.Itoa(int(lb.Flags))
	case "portFlags":
		return strconv.Itoa(int(lb.PortFlags))
	case "distribution":
		return strconv.Itoa(int(lb.Distribution))
	case "sourceVIP":
		return lb.SourceVIP
	}
	return ""
}

// backendAtoms pairs the backends only one side has: a "gone X" upstream
// with X on winproxy's side (the endpoint of X was replaced), the rest one
// by one.
func backendAtoms(a atom, up, win []string) []atom {
	upOnly, winOnly := minus(up, win), minus(win, up)
	var out []atom
	for _, u := range upOnly {
		b := a
		b.Kind, b.Up = atomBackend, u
		if x, ok := strings.CutPrefix(u, "gone "); ok {
			if i := slices.Index(winOnly, x); i >= 0 {
				b.Win = x
				winOnly = slices.Delete(winOnly, i, i+1)
			}
		}
		out = append(out, b)
	}
	for _, w := range winOnly {
		b := a
		b.Kind, b.Win = atomBackend, w
		out = append(out, b)
	}
	return out
}

// minus is the multiset difference a - b.
func minus(a, b []string) []string {
	rest := slices.Clone(b)
	var out []string
	for _, x := range a {
		if i := slices.Index(rest, x); i >= 0 {
			rest = slices.Delete(rest, i, i+1)
			continue
		}
		out = append(out, x)
	}
	return out
}

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

// rolesOf maps the frontends the services claim to their roles (reference
// §2.1), for the families the node proxies.
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

// classify explains each atom of one step, adding to the counts by
// difference and returning the atoms nothing explains. verbose, if set,
// gets one line per atom.
func classify(x *stepCtx, atoms []atom, counts map[string]int, verbose func(string)) (unexplained []atom) {
	for i := range atoms {
		a := &atoms[i]
		id := ""
		for _, d := range allowList {
			if d.explains(x, a) {
				id = d.ID
				break
			}
		}
		if verbose != nil {
			verbose(fmt.Sprintf("step %d: %s\n    -> %s", x.step, a, cmp.Or(id, "UNEXPLAINED")))
		}
		if id == "" {
			unexplained = append(unexplained, *a)
			continue
		}
		counts[id]++
	}
	return unexplained
}
