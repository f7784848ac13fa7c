package engine

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAddrRefs merges a service's remote endpoints and looked-up addresses into the one list its
// contribution keeps: each address once, in order, with what the service did with it.
func TestAddrRefs(t *testing.T) {
	a, b, c, d := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3"), netip.MustParseAddr("fd00::1")
	// mapped is a's IPv4-mapped IPv6 form: another address, which must not be held as a.
	mapped := netip.MustParseAddr("::ffff:10.0.0.1")
	// used is one address of the list with what the service did with it.
	type used struct {
		ip       netip.Addr
		lookedUp bool
		remote   remoteUse
	}
	tests := []struct {
		name string
		// remotes and ips are as serviceComputer.result leaves them: sorted, each address once.
		remotes []RemoteEndpoint
		ips     []netip.Addr
		want    []used
	}{
		{name: "nothing used", want: nil},
		{
			name:    "a remote backend that was looked up, the usual case",
			remotes: []RemoteEndpoint{{IP: a}}, ips: []netip.Addr{a},
			want: []used{{ip: a, lookedUp: true, remote: backendRemote}},
		},
		{
			name: "looked up only: a local endpoint holds it",
			ips:  []netip.Addr{a, b},
			want: []used{{ip: a, lookedUp: true}, {ip: b, lookedUp: true}},
		},
		{
			name:    "a service VIP's endpoint, never looked up as a backend",
			remotes: []RemoteEndpoint{{IP: c, ServiceVIP: true}},
			want:    []used{{ip: c, remote: serviceVIPRemote}},
		},
		{
			name:    "interleaved, the last of either list alone, both families",
			remotes: []RemoteEndpoint{{IP: a}, {IP: c, ServiceVIP: true}, {IP: d}},
			ips:     []netip.Addr{a, b, c},
			want: []used{
				{ip: a, lookedUp: true, remote: backendRemote},
				{ip: b, lookedUp: true},
				{ip: c, lookedUp: true, remote: serviceVIPRemote},
				{ip: d, remote: backendRemote},
			},
		},
		{
			name:    "two addresses held by their place, one of them IPv4-mapped",
			remotes: []RemoteEndpoint{{IP: a}, {IP: mapped}, {IP: d}},
			ips:     []netip.Addr{mapped, d},
			want: []used{
				{ip: a, remote: backendRemote},
				{ip: mapped, lookedUp: true, remote: backendRemote},
				{ip: d, lookedUp: true, remote: backendRemote},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []used
			for ip, ref := range addrRefs(tc.remotes, tc.ips).all() {
				got = append(got, used{ip, ref.lookedUp, ref.remote})
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(used{}), cmp.Comparer(func(x, y netip.Addr) bool { return x == y })); diff != "" {
				t.Errorf("addrRefs (-want +got):\n%s", diff)
			}
		})
	}
}
