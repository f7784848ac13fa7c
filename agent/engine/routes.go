package engine

import "net/netip"

// providerAddress is winkernel's PA lookup (docs/design/dataplane.md#provider-addresses):
// over all routes, the last whose prefix contains ip or whose PA equals ip
// wins. Zero means none.
func (s *shared) providerAddress(ip netip.Addr) netip.Addr {
	var pa netip.Addr
	for _, r := range s.routes {
		if r.DestinationPrefix.Contains(ip) || r.ProviderAddress == ip {
			pa = r.ProviderAddress
		}
	}
	return pa
}

// nodeFor names the other node whose pod CIDR holds ip, if any.
func (s *shared) nodeFor(ip netip.Addr) string {
	for _, n := range s.nodeCIDRs {
		if n.prefix.Contains(ip) {
			return n.node
		}
	}
	return ""
}
