package apply

import (
	"net/netip"

	"github.com/winproxy/winproxy/agent/hns"
)

// brief is a remote endpoint of the model's network held in brief: its ID,
// address and provider address. Everything else about it follows from the
// address and the network (expand): the winproxy- name, the MAC winkernel
// conjures from the address, the remote flag, no prefix length. The model
// holds a hundred thousand remote endpoints at 10k services; as
// hns.Endpoints, each with its own name, MAC and address slice, they were
// the largest part of the applier's memory (about 250 bytes each, against
// the 72 of a brief; docs/performance.md, "Where the live heap goes").
type brief struct {
	id     string
	ip, pa netip.Addr
	// upperMAC is set when HNS answered the MAC in upper case: no source
	// says which case HNS answers in, and the agent asks in lower case.
	upperMAC bool
}

// briefOf is ep in brief, when expanding the brief in network networkID
// gives ep back field for field; an endpoint anyone named or shaped
// otherwise (a foreign one, a local one, one HNS answered in another form)
// is kept whole.
func briefOf(ep hns.Endpoint, networkID string) (brief, bool) {
	if !ep.Remote || len(ep.IPs) != 1 || ep.PrefixLength != 0 || ep.NetworkID != networkID || !ep.IPs[0].IsValid() {
		return brief{}, false
	}
	ip := ep.IPs[0]
	var buf [64]byte
	if ep.Name != string(ip.AppendTo(append(buf[:0], hns.EndpointNamePrefix...))) {
		return brief{}, false
	}
	b := brief{id: ep.ID, ip: ip, pa: ep.ProviderAddress}
	mac := hns.AppendConjuredMAC(buf[:0], ip)
	switch {
	case ep.MAC == string(mac):
	case ep.MAC == string(upperHex(mac)):
		b.upperMAC = true
	default:
		return brief{}, false
	}
	return b, true
}

// expand is the endpoint b stands for in network networkID: a sync that
// programs a change looks up a few, each two allocations (its name and MAC
// in one string, its address slice).
func (b brief) expand(networkID string) hns.Endpoint {
	var buf [80]byte
	return b.endpoint(string(b.appendText(buf[:0])), []netip.Addr{b.ip}, networkID)
}

// appendText appends the name, then the MAC, of b's endpoint to buf.
func (b brief) appendText(buf []byte) []byte {
	return b.appendMAC(b.ip.AppendTo(append(buf, hns.EndpointNamePrefix...)))
}

// endpoint is b's endpoint, its name and MAC read from text, which starts
// with what appendText appended, and its addresses ips.
func (b brief) endpoint(text string, ips []netip.Addr, networkID string) hns.Endpoint {
	var buf [64]byte
	name := len(hns.EndpointNamePrefix) + len(b.ip.AppendTo(buf[:0]))
	mac := name + len(hns.FallbackMAC) // every conjured MAC has its length
	return hns.Endpoint{ID: b.id, Name: text[:name], NetworkID: networkID, IPs: ips, MAC: text[name:mac], Remote: true,
		ProviderAddress: b.pa}
}

// appendMAC appends the MAC of b's endpoint to buf.
func (b brief) appendMAC(buf []byte) []byte {
	n := len(buf)
	buf = hns.AppendConjuredMAC(buf, b.ip)
	if b.upperMAC {
		upperHex(buf[n:])
	}
	return buf
}

// upperHex upper-cases the hex digits of a MAC in place.
func upperHex(mac []byte) []byte {
	for i, c := range mac {
		if 'a' <= c && c <= 'f' {
			mac[i] = c - 'a' + 'A'
		}
	}
	return mac
}

// expandAll appends the endpoints bs stand for to eps, their names and MACs
// in one allocation for all and their addresses in another: a sync that
// reads the whole model gets a hundred thousand at 10k services.
func expandAll(eps []hns.Endpoint, bs []brief, networkID string) []hns.Endpoint {
	text := make([]byte, 0, len(bs)*(len(hns.EndpointNamePrefix)+len("255.255.255.255")+len(hns.FallbackMAC)))
	for _, b := range bs {
		text = b.appendText(text)
	}
	all := string(text)
	ips := make([]netip.Addr, len(bs))
	for i, b := range bs {
		ips[i] = b.ip
		ep := b.endpoint(all, ips[i:i+1:i+1], networkID)
		eps = append(eps, ep)
		all = all[len(ep.Name)+len(ep.MAC):]
	}
	return eps
}
