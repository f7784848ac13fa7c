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
	var b [len(FallbackMAC)]byte
	return string(AppendConjuredMAC(b[:0], ip))
}

// AppendConjuredMAC appends ConjureMAC(ip), always len(FallbackMAC) bytes,
// to b, so that a caller making many can keep them in one string.
// Formatted by hand: the engine conjures one per remote backend, and fmt
// costs more than the rest of the making.
func AppendConjuredMAC(b []byte, ip netip.Addr) []byte {
	var a [4]byte
	switch {
	case ip.Is4():
		a = ip.As4()
	case ip.Is6() && !ip.Is4In6():
		v := ip.As16()
		a = [4]byte{v[15], v[14], v[13], v[12]}
	case ip.Is4In6():
		a = ip.Unmap().As4()
	default:
		return append(b, FallbackMAC...)
	}
	const hex = "0123456789abcdef"
	b = append(b, "02-11"...)
	for _, v := range a {
		b = append(b, '-', hex[v>>4], hex[v&0xf])
	}
	return b
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

// UpperHex upper-cases the hex digits of b in place and returns it: HNS answers MACs, and
// winproxy's ledger writes fingerprints, in upper case, and neither needs a copy to say so.
func UpperHex(b []byte) []byte {
	for i, c := range b {
		if 'a' <= c && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return b
}
