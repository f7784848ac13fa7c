package engine

import (
	"encoding/binary"
	"net/netip"
	"slices"

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
	// address, to the index of the last route with it; IPv4 ones, the
	// common case, by their number (a cheaper map key than a netip value).
	byPrefix4 map[uint64]int // bits<<32 | masked address
	byPA4     map[uint32]int
	byPrefix  map[netip.Prefix]int
	byPA      map[netip.Addr]int
	// lengths are the prefix lengths the routes use.
	lengths []prefixLength
}

type prefixLength struct {
	ipv4 bool
	bits int
}

func newProviderAddresses(routes []hns.RemoteSubnetRoute) providerAddresses {
	t := providerAddresses{routes: routes, byPrefix4: map[uint64]int{}, byPA4: map[uint32]int{},
		byPrefix: map[netip.Prefix]int{}, byPA: map[netip.Addr]int{}}
	for i, r := range routes {
		if a := r.ProviderAddress; a.Is4() {
			t.byPA4[ipv4Number(a)] = i
		} else {
			t.byPA[a] = i
		}
		p := r.DestinationPrefix
		if !p.IsValid() {
			continue // contains nothing
		}
		p = p.Masked()
		l := prefixLength{ipv4: p.Addr().Is4(), bits: p.Bits()}
		if l.ipv4 {
			t.byPrefix4[prefix4Key(p.Addr(), l.bits)] = i
		} else {
			t.byPrefix[p] = i
		}
		if !slices.Contains(t.lengths, l) {
			t.lengths = append(t.lengths, l)
		}
	}
	return t
}

func ipv4Number(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

// prefix4Key is the key of the IPv4 prefix of the given length holding a.
func prefix4Key(a netip.Addr, bits int) uint64 {
	mask := uint32(0)
	if bits > 0 {
		mask = ^uint32(0) << (32 - bits)
	}
	return uint64(bits)<<32 | uint64(ipv4Number(a)&mask)
}

// lookup is the provider address for ip; zero means none.
func (t *providerAddresses) lookup(ip netip.Addr) netip.Addr {
	var last int
	if ip.Is4() {
		last = t.lookup4(ip)
	} else {
		last = t.lookup6(ip)
	}
	if last < 0 {
		return netip.Addr{}
	}
	return t.routes[last].ProviderAddress
}

func (t *providerAddresses) lookup4(ip netip.Addr) int {
	last := -1
	if i, ok := t.byPA4[ipv4Number(ip)]; ok {
		last = i
	}
	for _, l := range t.lengths {
		if l.ipv4 {
			if i, ok := t.byPrefix4[prefix4Key(ip, l.bits)]; ok && i > last {
				last = i
			}
		}
	}
	return last
}

func (t *providerAddresses) lookup6(ip netip.Addr) int {
	last := -1
	if i, ok := t.byPA[ip]; ok {
		last = i
	}
	// A prefix contains no zoned address, and no address of the other
	// family (netip.Prefix.Contains).
	if ip.Zone() != "" {
		return last
	}
	for _, l := range t.lengths {
		if l.ipv4 {
			continue
		}
		if p, err := ip.Prefix(l.bits); err == nil {
			if i, ok := t.byPrefix[p]; ok && i > last {
				last = i
			}
		}
	}
	return last
}
