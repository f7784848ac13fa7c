package engine

import (
	"net/netip"
	"reflect"
	"slices"
	"unique"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

// Slice is what the engine reads of an EndpointSlice. Every agent keeps every slice of the
// cluster (100,000 endpoints at 10k Services), so the agent's informer stores this form instead of
// the API's (agent/daemon/slim.go): an endpoint here is 48 bytes, where the API's is 96 with a
// slice and a string for its addresses and pointers for its conditions, and its address is parsed
// once, when the slice arrives, instead of at every computation of its service.
type Slice struct {
	Namespace, Name string
	// Service is the Service the slice labels (kubernetes.io/service-name); a slice without one
	// belongs to no Service.
	Service string
	// Family is the slice's address type; empty for FQDN and unknown types, whose endpoints no
	// Service port uses.
	Family v1alpha1.IPFamily
	// Ports are matched by name and protocol (slicePort).
	Ports     []SlicePort
	Endpoints []SliceEndpoint
}

// SlicePort is one port of a Slice: 40 bytes, where the API's is 32 with four pointers, three of
// them to values of their own (about 90 bytes a slice at 10k Services).
type SlicePort struct {
	// Name is the API's, empty when unset.
	Name string
	// Protocol is the API's, TCP when unset, the package's constant where it is a known one
	// (slicePortProtocol).
	Protocol corev1.Protocol
	// Port is the API's, 0 when unset: either way no backend listens on it.
	Port int32
}

// SliceEndpoint is one endpoint of a Slice, read as kube-proxy's endpoint-slice cache reads it
// (pkg/proxy/endpointslicecache.go): its first address only, unset conditions defaulted.
type SliceEndpoint struct {
	// Addr is the first address as it parses (an IPv4-mapped IPv6 address stays mapped: its
	// family is the slice's to judge); invalid when the endpoint has none or it does not parse.
	Addr netip.Addr
	// Node is the endpoint's node name, held once for all endpoints and slices of the node (a
	// handle of 8 bytes that compares as a pointer), the zero handle when unset or empty (nodeOf).
	Node unique.Handle[string]
	// Hints are the endpoint's topology hints (topology.go), nil for none.
	Hints *discoveryv1.EndpointHints
	// Ready and Serving default to true, Terminating to false.
	Ready, Serving, Terminating bool
}

// SliceOf reads an EndpointSlice into the engine's form. The result shares the slice's hints and
// strings.
func SliceOf(es *discoveryv1.EndpointSlice) *Slice {
	s := &Slice{}
	s.read(es, make([]SliceEndpoint, len(es.Endpoints)))
	return s
}

// slicesOf reads many slices at once, their endpoints into one allocation (and each one's ports
// into one more): Compute reads every slice of the cluster for one computation.
func slicesOf(in []*discoveryv1.EndpointSlice) []Slice {
	n := 0
	for _, es := range in {
		n += len(es.Endpoints)
	}
	out, eps := make([]Slice, len(in)), make([]SliceEndpoint, n)
	for i, es := range in {
		out[i].read(es, eps[:len(es.Endpoints):len(es.Endpoints)])
		eps = eps[len(es.Endpoints):]
	}
	return out
}

// read reads es into s, its endpoints into eps (as long as es's).
func (s *Slice) read(es *discoveryv1.EndpointSlice, eps []SliceEndpoint) {
	*s = Slice{Namespace: es.Namespace, Name: es.Name, Service: es.Labels[discoveryv1.LabelServiceName],
		Endpoints: eps}
	if len(es.Ports) > 0 {
		s.Ports = make([]SlicePort, len(es.Ports))
		for i, p := range es.Ports {
			s.Ports[i] = SlicePort{Name: deref(p.Name), Protocol: slicePortProtocol(p.Protocol), Port: deref(p.Port)}
		}
	}
	switch es.AddressType {
	case discoveryv1.AddressTypeIPv4:
		s.Family = v1alpha1.IPv4
	case discoveryv1.AddressTypeIPv6:
		s.Family = v1alpha1.IPv6
	}
	for i, e := range es.Endpoints {
		out := &eps[i]
		if len(e.Addresses) > 0 {
			out.Addr, _ = netip.ParseAddr(e.Addresses[0]) // the zero Addr when it does not parse
		}
		out.Node = nodeOf(deref(e.NodeName))
		out.Hints = e.Hints
		out.Ready = e.Conditions.Ready == nil || *e.Conditions.Ready
		out.Serving = e.Conditions.Serving == nil || *e.Conditions.Serving
		out.Terminating = e.Conditions.Terminating != nil && *e.Conditions.Terminating
	}
}

// DeepCopy copies s and everything it points to.
func (s *Slice) DeepCopy() *Slice {
	out := *s
	out.Ports = slices.Clone(s.Ports)
	out.Endpoints = slices.Clone(s.Endpoints)
	for i := range out.Endpoints {
		out.Endpoints[i].Hints = out.Endpoints[i].Hints.DeepCopy()
	}
	return &out
}

// Equal reports whether s and o read the same, so that an update from one to the other changes
// nothing the engine computes: kube-proxy's endpoint-slice cache asks the same before it queues
// a sync (pkg/proxy/endpointslicecache.go). Endpoints compare in order; a slice whose endpoints
// were only reordered reads as changed, which costs a sync that programs nothing.
func (s *Slice) Equal(o *Slice) bool {
	if s.Namespace != o.Namespace || s.Name != o.Name || s.Service != o.Service || s.Family != o.Family ||
		!slices.Equal(s.Ports, o.Ports) || len(s.Endpoints) != len(o.Endpoints) {
		return false
	}
	for i := range s.Endpoints {
		a, b := &s.Endpoints[i], &o.Endpoints[i]
		if a.Addr != b.Addr || a.Node != b.Node || a.Ready != b.Ready || a.Serving != b.Serving ||
			a.Terminating != b.Terminating || a.Hints != b.Hints && !reflect.DeepEqual(a.Hints, b.Hints) {
			return false
		}
	}
	return true
}

// slicePortProtocol is a slice port's protocol: TCP when unset, as kube-proxy reads it, and an
// empty one (set, but to nothing) kept empty, so that it serves no Service port.
func slicePortProtocol(p *corev1.Protocol) corev1.Protocol {
	switch {
	case p == nil:
		return corev1.ProtocolTCP
	case *p == "":
		return ""
	}
	return knownProtocol(*p)
}

// on reports whether the endpoint runs on node (nodeOf): never when either is unset.
func (e *SliceEndpoint) on(node unique.Handle[string]) bool {
	return node != unique.Handle[string]{} && e.Node == node
}

// nodeOf is the handle of a node's name; the zero handle for none.
func nodeOf(name string) unique.Handle[string] {
	if name == "" {
		return unique.Handle[string]{}
	}
	return unique.Make(name)
}

// deref is what p points to, the zero value for nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
