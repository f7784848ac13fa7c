package engine

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/winproxy/winproxy/agent/hns"
)

// scanProviderAddress is winkernel's lookup as written upstream: a scan of
// every route, the last match winning.
func scanProviderAddress(routes []hns.RemoteSubnetRoute, ip netip.Addr) netip.Addr {
	var pa netip.Addr
	for _, r := range routes {
		if r.DestinationPrefix.Contains(ip) || r.ProviderAddress == ip {
			pa = r.ProviderAddress
		}
	}
	return pa
}

func TestProviderAddressLookupIsWinkernels(t *testing.T) {
	fixed := []hns.RemoteSubnetRoute{
		{DestinationPrefix: netip.MustParsePrefix("192.168.2.0/24"), ProviderAddress: ip("10.0.0.3")},
	}
	for _, tc := range []struct{ ip, want string }{
		{"10.0.0.3", "10.0.0.3"},    // a remote node
		{"192.168.2.3", "10.0.0.3"}, // a pod of that node
		{"11.0.0.1", ""},            // outside the cluster
	} {
		var want netip.Addr
		if tc.want != "" {
			want = ip(tc.want)
		}
		pa := newProviderAddresses(fixed)
		if got := pa.lookup(ip(tc.ip)); got != want {
			t.Errorf("lookup(%s) = %v, want %v", tc.ip, got, want)
		}
	}

	// Random overlapping routes of both families, unmasked prefixes, provider
	// addresses inside other routes' prefixes and an invalid prefix: the
	// index answers as the scan does.
	r := rand.New(rand.NewPCG(1, 2))
	addr := func() netip.Addr {
		if r.IntN(4) == 0 {
			return netip.AddrFrom16([16]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(r.IntN(3)), byte(r.IntN(3)), byte(r.IntN(4))})
		}
		return netip.AddrFrom4([4]byte{10, byte(r.IntN(3)), byte(r.IntN(3)), byte(r.IntN(4))})
	}
	for range 200 {
		var routes []hns.RemoteSubnetRoute
		for range r.IntN(8) {
			a := addr()
			p := netip.PrefixFrom(a, a.BitLen()-r.IntN(20))
			if r.IntN(10) == 0 {
				p = netip.Prefix{}
			}
			routes = append(routes, hns.RemoteSubnetRoute{DestinationPrefix: p, ProviderAddress: addr()})
		}
		pa := newProviderAddresses(routes)
		for range 50 {
			a := addr()
			if got, want := pa.lookup(a), scanProviderAddress(routes, a); got != want {
				t.Fatalf("routes %v: lookup(%s) = %v, the scan gives %v", routes, a, got, want)
			}
		}
	}
}
