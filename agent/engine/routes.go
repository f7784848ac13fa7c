package engine

import (
	"net/netip"

	"github.com/winproxy/winproxy/agent/hns"
)

// providerAddresses is winkernel's provider-address lookup
// (findRemoteSubnetProviderAddress, docs/design/dataplane.md#provider-addresses):
// over all remote-subnet routes, the last whose prefix contains the IP or
// whose provider address equals it wins. The routes are indexed once per
// node context, so a backend costs a map lookup per prefix length instead
// of a scan of every route.
type providerAddresses struct {
	routes []hns.RemoteSubnetRoute
	// byPrefix and byPA map a route's masked prefix, and its provider
	// address, to the index of the last route with it.
	byPrefix map[netip.Prefix]int
	byPA     map[netip.Addr]int
	// lengths are the prefix lengths the routes use.
	lengths []prefixLength
}

type prefixLength struct {
	ipv4 bool
	bits int
}

func newProviderAddresses(routes []hns.RemoteSubnetRoute) providerAddresses {
	t := providerAddresses{routes: routes, byPrefix: make(map[netip.Prefix]int, len(routes)), byPA: make(map[netip.Addr]int, len(routes))}
	for i, r := range routes {
		t.byPA[r.ProviderAddress] = i
		p := r.DestinationPrefix
		if !p.IsValid() {
			continue // contains nothing
		}
		t.byPrefix[p.Masked()] = i
		l := prefixLength{ipv4: p.Addr().Is4(), bits: p.Bits()}
		if !contains(t.lengths, l) {
			t.lengths = append(t.lengths, l)
		}
	}
	return t
}

func contains(ls []prefixLength, l prefixLength) bool {
	for _, x := range ls {
		if x == l {
			return true
		}
	}
	return false
}

// lookup is the provider address for ip; zero means none.
func (t *providerAddresses) lookup(ip netip.Addr) netip.Addr {
	last := -1
	if i, ok := t.byPA[ip]; ok {
		last = i
	}
	// A prefix contains no zoned address, and no address of the other
	// family (netip.Prefix.Contains).
	if ip.Zone() == "" {
		for _, l := range t.lengths {
			if l.ipv4 != ip.Is4() {
				continue
			}
			if p, err := ip.Prefix(l.bits); err == nil {
				if i, ok := t.byPrefix[p]; ok && i > last {
					last = i
				}
			}
		}
	}
	if last < 0 {
		return netip.Addr{}
	}
	return t.routes[last].ProviderAddress
}

// nodeFor names the other node whose pod CIDR holds ip, if any. It is
// asked only about backends without a provider address, so a scan does.
func (s *shared) nodeFor(ip netip.Addr) string {
	for _, n := range s.nodeCIDRs {
		if n.prefix.Contains(ip) {
			return n.node
		}
	}
	return ""
}
