package engine

import (
	"net/netip"
	"testing"
	"unique"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

// SliceOf reads an endpoint as kube-proxy's endpoint-slice cache does: the first address, unset
// conditions defaulted, and what does not parse kept as nothing rather than dropped, so that a
// slice's endpoints stay where they were.
func TestSliceOf(t *testing.T) {
	yes, no, node := true, false, "win-1"
	hints := &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "z1"}}}
	for _, tc := range []struct {
		name string
		// addressType and labels are the slice's.
		addressType discoveryv1.AddressType
		labels      map[string]string
		// endpoint is the slice's one endpoint.
		endpoint discoveryv1.Endpoint
		// want is the Slice read, its ports aside.
		want Slice
	}{
		{
			name: "unset conditions: ready, serving, not terminating", addressType: discoveryv1.AddressTypeIPv4,
			labels:   map[string]string{discoveryv1.LabelServiceName: "web"},
			endpoint: discoveryv1.Endpoint{Addresses: []string{"10.244.1.5", "10.244.1.6"}, NodeName: &node, Hints: hints},
			want: Slice{Service: "web", Family: v1alpha1.IPv4,
				Endpoints: []SliceEndpoint{{Addr: netip.MustParseAddr("10.244.1.5"), Node: unique.Make("win-1"), Hints: hints, Ready: true, Serving: true}}},
		},
		{
			name: "set conditions as they are", addressType: discoveryv1.AddressTypeIPv6,
			labels: map[string]string{discoveryv1.LabelServiceName: "web"},
			endpoint: discoveryv1.Endpoint{Addresses: []string{"fd00::5"},
				Conditions: discoveryv1.EndpointConditions{Ready: &no, Serving: &yes, Terminating: &yes}},
			want: Slice{Service: "web", Family: v1alpha1.IPv6,
				Endpoints: []SliceEndpoint{{Addr: netip.MustParseAddr("fd00::5"), Serving: true, Terminating: true}}},
		},
		{
			name: "an IPv4-mapped address stays mapped: the family check is the engine's", addressType: discoveryv1.AddressTypeIPv6,
			endpoint: discoveryv1.Endpoint{Addresses: []string{"::ffff:10.244.1.5"}},
			want:     Slice{Family: v1alpha1.IPv6, Endpoints: []SliceEndpoint{{Addr: netip.MustParseAddr("::ffff:10.244.1.5"), Ready: true, Serving: true}}},
		},
		{
			name: "an address that does not parse is no address", addressType: discoveryv1.AddressTypeIPv4,
			endpoint: discoveryv1.Endpoint{Addresses: []string{"10.244.1"}},
			want:     Slice{Family: v1alpha1.IPv4, Endpoints: []SliceEndpoint{{Ready: true, Serving: true}}},
		},
		{
			name: "an FQDN slice has no family", addressType: discoveryv1.AddressTypeFQDN,
			endpoint: discoveryv1.Endpoint{Addresses: []string{"db.example.com"}},
			want:     Slice{Endpoints: []SliceEndpoint{{Ready: true, Serving: true}}},
		},
		{
			name: "no address", addressType: discoveryv1.AddressTypeIPv4,
			want: Slice{Family: v1alpha1.IPv4, Endpoints: []SliceEndpoint{{Ready: true, Serving: true}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-x", Labels: tc.labels},
				AddressType: tc.addressType, Endpoints: []discoveryv1.Endpoint{tc.endpoint}}
			want := tc.want
			want.Namespace, want.Name = "ns", "web-x"
			if diff := cmp.Diff(&want, SliceOf(es), cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
				cmp.Comparer(func(a, b unique.Handle[string]) bool { return a == b })); diff != "" {
				t.Errorf("SliceOf (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSlicePortsOf: a slice's ports are read as the engine matches them, each one kept, in order.
func TestSlicePortsOf(t *testing.T) {
	udp, sctp, odd, empty := corev1.ProtocolUDP, corev1.ProtocolSCTP, corev1.Protocol("QUIC"), corev1.Protocol("")
	// decodedUDP is UDP as a decoder makes it: a string of its own, not the package's constant.
	decodedUDP := corev1.Protocol(string([]byte("UDP")))
	name, port, zero := "dns", int32(53), int32(0)
	es := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{
		{Name: &name, Protocol: &udp, Port: &port},
		{Protocol: &decodedUDP, Port: &port},       // no name
		{Port: &port},                              // no protocol: TCP
		{Name: &name, Protocol: &sctp},             // no port
		{Name: &name, Protocol: &odd, Port: &zero}, // an unknown protocol, port 0
		{Protocol: &empty, Port: &port},            // a protocol set to nothing: not TCP
	}}
	want := []SlicePort{
		{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53},
		{Protocol: corev1.ProtocolUDP, Port: 53},
		{Protocol: corev1.ProtocolTCP, Port: 53},
		{Name: "dns", Protocol: corev1.ProtocolSCTP},
		{Name: "dns", Protocol: "QUIC"},
		{Port: 53},
	}
	got := SliceOf(es).Ports
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
	if unsafe.StringData(string(got[1].Protocol)) != unsafe.StringData(string(corev1.ProtocolUDP)) {
		t.Error("a decoded UDP is kept as its own string, not the package's constant")
	}
	// Matched by name and protocol; a port 0 or unset serves nothing.
	s := SliceOf(es)
	for _, tc := range []struct {
		name  string
		proto corev1.Protocol
		want  int32
	}{
		{"dns", corev1.ProtocolUDP, 53}, {"", corev1.ProtocolUDP, 53}, {"", corev1.ProtocolTCP, 53},
		{"dns", corev1.ProtocolTCP, 0}, {"dns", corev1.ProtocolSCTP, 0}, {"dns", "QUIC", 0},
	} {
		if got := slicePort(s, tc.name, tc.proto); got != tc.want {
			t.Errorf("slicePort(%q, %s) = %d, want %d", tc.name, tc.proto, got, tc.want)
		}
	}
	// A protocol set to nothing is not TCP, as kube-proxy reads it.
	only := SliceOf(&discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Protocol: &empty, Port: &port}}})
	if got := slicePort(only, "", corev1.ProtocolTCP); got != 0 {
		t.Errorf("a port whose protocol is set to nothing serves TCP on %d", got)
	}
}
