package hns

import "net/netip"

// FallbackMAC is what winkernel conjures when the IP cannot be parsed.
const FallbackMAC = "02-11-22-33-44-55"

// ConjureMAC derives the MAC winkernel gives a remote endpoint from its IP:
// the locally administered prefix 02-11 followed by four bytes of the
// address (IPv4: the address itself; IPv6: bytes 15, 14, 13, 12). The MAC is
// never put on the wire, but keeping winkernel's value means an endpoint
// created by either proxy looks the same.
func ConjureMAC(ip netip.Addr) string {
	var b [4]byte
	switch {
	case ip.Is4():
		b = ip.As4()
	case ip.Is6() && !ip.Is4In6():
		a := ip.As16()
		b = [4]byte{a[15], a[14], a[13], a[12]}
	case ip.Is4In6():
		b = ip.Unmap().As4()
	default:
		return FallbackMAC
	}
	// Formatted by hand: the engine conjures one per remote backend, and
	// fmt costs more than the rest of the string's making.
	const hex = "0123456789abcdef"
	mac := []byte("02-11-00-00-00-00")
	for i, v := range b {
		mac[6+3*i], mac[7+3*i] = hex[v>>4], hex[v&0xf]
	}
	return string(mac)
}

// ConjureMACString is ConjureMAC for an unparsed address; invalid input gets
// FallbackMAC, as in winkernel.
func ConjureMACString(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return FallbackMAC
	}
	return ConjureMAC(a)
}
