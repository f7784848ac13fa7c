package conformance

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// topologyExcludes reports whether topology-aware routing, which winproxy
// does as kube-proxy does on Linux (pkg/proxy/topology.go) and winkernel
// does not, leaves the backend b out of the load balancer at f: the load
// balancer is one of a service port's that use every endpoint of the
// cluster (not only local ones), every ready endpoint of the port has
// hints of a kind, one of them names this node (for nodes) or its zone,
// and no entry of b's address does. It reads the objects, not winproxy's
// code, so that a wrong rule in the engine shows as a difference.
func (x *stepCtx) topologyExcludes(f Frontend, b string) bool {
	addr := backendAddress(b, f.Family)
	for _, r := range x.roles[f] {
		svc := x.services[r.Service]
		if svc == nil || !x.usesClusterSet(svc, r.Kind) {
			continue
		}
		eps := x.portEndpoints(svc, r.Port, f.Family)
		zone, node := x.o.c.Zone, x.o.c.NodeName
		var hinted func(discoveryv1.Endpoint) bool
		switch {
		case allReadyHinted(eps, forNodes) && slices.ContainsFunc(eps, func(e discoveryv1.Endpoint) bool { return ready(e) && slices.Contains(forNodes(e), node) }):
			hinted = func(e discoveryv1.Endpoint) bool { return slices.Contains(forNodes(e), node) }
		case allReadyHinted(eps, forZones) && slices.ContainsFunc(eps, func(e discoveryv1.Endpoint) bool { return ready(e) && slices.Contains(forZones(e), zone) }):
			hinted = func(e discoveryv1.Endpoint) bool { return slices.Contains(forZones(e), zone) }
		default:
			continue
		}
		listed, in := false, false
		for _, e := range eps {
			if canonIP(e.Addresses[0]) == addr {
				listed, in = true, in || hinted(e)
			}
		}
		if listed && !in {
			return true
		}
	}
	return false
}

// usesClusterSet reports whether the service's load balancer of kind uses
// every endpoint rather than the local ones: internalTrafficPolicy Cluster
// for the ClusterIP one; for the others, unless externalTrafficPolicy Local
// (or, for node-port and ingress ones, preserve-destination) makes them
// local, which they are only on an HNS with DSR.
func (x *stepCtx) usesClusterSet(svc *corev1.Service, kind string) bool {
	dsr := x.o.c.Features.DSR
	etpLocal := dsr && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	preserve := dsr && svc.Annotations["preserve-destination"] == "true"
	switch kind {
	case "clusterip":
		return svc.Spec.InternalTrafficPolicy == nil || *svc.Spec.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyLocal
	case "externalip":
		return !etpLocal
	case "nodeport", "ingress":
		return !etpLocal && !preserve
	}
	return false
}

// portEndpoints are the endpoints the service's slices of the family list
// for the port (by name, with a port number), one per address and port
// number as kube-proxy's endpoint-slice cache keeps them: a later entry
// replaces an earlier one unless it is terminating.
func (x *stepCtx) portEndpoints(svc *corev1.Service, port, family string) []discoveryv1.Endpoint {
	at := discoveryv1.AddressTypeIPv4
	if family == "v6" {
		at = discoveryv1.AddressTypeIPv6
	}
	type key struct {
		ip   string
		port int32
	}
	var order []key
	byKey := map[key]discoveryv1.Endpoint{}
	for _, k := range sortedKeys(x.slices) {
		sl := x.slices[k]
		if sl.Namespace != svc.Namespace || sl.Labels[discoveryv1.LabelServiceName] != svc.Name || sl.AddressType != at {
			continue
		}
		i := slices.IndexFunc(sl.Ports, func(p discoveryv1.EndpointPort) bool { return deref(p.Name) == port && deref(p.Port) != 0 })
		if i < 0 {
			continue
		}
		for _, e := range sl.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			k := key{canonIP(e.Addresses[0]), deref(sl.Ports[i].Port)}
			if _, seen := byKey[k]; !seen {
				order = append(order, k)
			} else if deref(e.Conditions.Terminating) {
				continue
			}
			byKey[k] = e
		}
	}
	out := make([]discoveryv1.Endpoint, 0, len(order))
	for _, k := range order {
		out = append(out, byKey[k])
	}
	return out
}

func ready(e discoveryv1.Endpoint) bool { return e.Conditions.Ready == nil || *e.Conditions.Ready }

func forZones(e discoveryv1.Endpoint) []string {
	if e.Hints == nil {
		return nil
	}
	var out []string
	for _, z := range e.Hints.ForZones {
		out = append(out, z.Name)
	}
	return out
}

func forNodes(e discoveryv1.Endpoint) []string {
	if e.Hints == nil {
		return nil
	}
	var out []string
	for _, n := range e.Hints.ForNodes {
		out = append(out, n.Name)
	}
	return out
}

// allReadyHinted: there is a ready endpoint, and every one has hints of
// the kind.
func allReadyHinted(eps []discoveryv1.Endpoint, hints func(discoveryv1.Endpoint) []string) bool {
	someReady := false
	for _, e := range eps {
		if !ready(e) {
			continue
		}
		if len(hints(e)) == 0 {
			return false
		}
		someReady = true
	}
	return someReady
}

// backendAddress is the address of a canonical backend ("10.100.0.5",
// "remote 10.101.0.7", "gone 10.100.0.5", a local endpoint's addresses
// joined by commas) in the family.
func backendAddress(b, family string) string {
	if _, rest, ok := strings.Cut(b, " "); ok {
		b = rest
	}
	for _, ip := range strings.Split(b, ",") {
		if strings.Contains(ip, ":") == (family == "v6") {
			return ip
		}
	}
	return b
}
