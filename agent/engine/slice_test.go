package engine

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
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
				Endpoints: []SliceEndpoint{{Addr: netip.MustParseAddr("10.244.1.5"), Node: "win-1", Hints: hints, Ready: true, Serving: true}}},
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
			if diff := cmp.Diff(&want, SliceOf(es), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("SliceOf (-want +got):\n%s", diff)
			}
		})
	}
}
