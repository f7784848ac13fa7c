package apply

import (
	"cmp"
	"encoding/binary"
	"net/netip"

	"github.com/winproxy/winproxy/agent/addrmap"
	"github.com/winproxy/winproxy/agent/hns"
)

// brief is a remote endpoint of the model's network held in brief: its ID,
// address, provider address and MAC. Everything else about it follows from
// the address and the network (expand): the winproxy- name, the remote
// flag, no prefix length. The model holds a hundred thousand remote
// endpoints at 10k services; as hns.Endpoints, each with its own name, MAC
// and address slice, they were the largest part of the applier's memory
// (about 250 bytes each, against the 32 of a brief; docs/performance.md,
// "Where the live heap goes").
type brief struct {
	id string
	at briefAddr
	// pa is the provider address's place in the briefing's table: a node's
	// address, shared by every brief of a backend on that node.
	pa uint32
	// mac is the MAC: the one winkernel conjures from the address, as the
	// agent asks for it (conjuredMAC) or in upper case (conjuredUpperMAC: no
	// source says which case HNS answers in), or any other, such as the
	// host's MAC of a service VIP's endpoint, by its place in the briefing's
	// table after those two.
	mac uint32
}

// briefAddr is a brief's address in 8 bytes where a netip.Addr takes 24
// (1.8 MB at 10k services): its last 32 bits, and where its first 96 are. An
// IPv4 address has none (hi 0); an IPv6 one has 1 + their place in the
// briefing's table. A node's IPAM (host-local) hands its pods addresses from
// the low end of the node's CIDR, so they share their first 96 bits as they
// share its provider address. Where addresses were spread across a /64,
// each would have its own place: about 40 bytes more than the 24 it saves.
type briefAddr struct{ hi, lo uint32 }

func (a briefAddr) compare(b briefAddr) int {
	return cmp.Or(cmp.Compare(a.hi, b.hi), cmp.Compare(a.lo, b.lo))
}

// The MACs a brief holds without the briefing's table.
const (
	conjuredMAC uint32 = iota
	conjuredUpperMAC
	tabledMACs
)

// briefing is what the briefs of one model share: the network, and each
// provider address, tabled MAC and first 96 bits of an IPv6 address once. A
// hundred thousand backends run on at most a few thousand nodes, so a brief
// holds 4 bytes of a table where an address costs 24 (2.6 MB at 10k
// services); the ten thousand service VIPs' endpoints of an overlay node
// share the host's MAC.
type briefing struct {
	networkID string
	pas       []netip.Addr
	paAt      map[netip.Addr]uint32
	macs      []string
	macAt     map[string]uint32
	highs     [][12]byte
	highAt    map[[12]byte]uint32
}

// newBriefing is the briefing of network networkID, its table empty.
func newBriefing(networkID string) *briefing {
	return &briefing{networkID: networkID, paAt: map[netip.Addr]uint32{}, macAt: map[string]uint32{}, highAt: map[[12]byte]uint32{}}
}

// addrOf is ip as a brief holds it. An address with a zone is held by none.
// Adding makes a place in the table for the first 96 bits of an IPv6
// address when they have none; without it such an address is no brief's.
func (g *briefing) addrOf(ip netip.Addr, add bool) (briefAddr, bool) {
	if k, is4 := addrmap.Key4(ip); is4 {
		return briefAddr{lo: k}, true
	}
	if !ip.Is6() || ip.Zone() != "" {
		return briefAddr{}, false
	}
	b := ip.As16()
	high := [12]byte(b[:12])
	i, ok := g.highAt[high]
	if !ok {
		if !add {
			return briefAddr{}, false
		}
		g.highs = append(g.highs, high)
		i = uint32(len(g.highs))
		g.highAt[high] = i
	}
	return briefAddr{hi: i, lo: binary.BigEndian.Uint32(b[12:])}, true
}

// addr is the address a stands for.
func (g *briefing) addr(a briefAddr) netip.Addr {
	if a.hi == 0 {
		return addrmap.Addr4(a.lo)
	}
	var b [16]byte
	copy(b[:12], g.highs[a.hi-1][:])
	binary.BigEndian.PutUint32(b[12:], a.lo)
	return netip.AddrFrom16(b)
}

// paOf is pa's place in the table, added when new.
func (g *briefing) paOf(pa netip.Addr) uint32 {
	i, ok := g.paAt[pa]
	if !ok {
		i = uint32(len(g.pas))
		g.pas = append(g.pas, pa)
		g.paAt[pa] = i
	}
	return i
}

// macOf is mac's place in the table, added when new.
func (g *briefing) macOf(mac string) uint32 {
	i, ok := g.macAt[mac]
	if !ok {
		i = tabledMACs + uint32(len(g.macs))
		g.macs = append(g.macs, mac)
		g.macAt[mac] = i
	}
	return i
}

// briefOf is ep in brief, when expanding the brief in g's network
// gives ep back field for field; an endpoint anyone named or shaped
// otherwise (a foreign one, a local one, one HNS answered in another form)
// is kept whole.
func briefOf(ep hns.Endpoint, g *briefing) (brief, bool) {
	if !ep.Remote || len(ep.IPs) != 1 || ep.PrefixLength != 0 || ep.NetworkID != g.networkID || !ep.IPs[0].IsValid() {
		return brief{}, false
	}
	ip := ep.IPs[0]
	var buf [64]byte
	if ep.Name != string(ip.AppendTo(append(buf[:0], hns.EndpointNamePrefix...))) {
		return brief{}, false
	}
	at, ok := g.addrOf(ip, true)
	if !ok {
		return brief{}, false
	}
	b := brief{id: ep.ID, at: at}
	mac := hns.AppendConjuredMAC(buf[:0], ip)
	switch {
	case ep.MAC == string(mac):
	case ep.MAC == string(hns.UpperHex(mac)):
		b.mac = conjuredUpperMAC
	default:
		b.mac = g.macOf(ep.MAC)
	}
	b.pa = g.paOf(ep.ProviderAddress)
	return b, true
}

// expand is the endpoint b stands for in g's network: a sync that
// programs a change looks up a few, each two allocations (its name and
// conjured MAC in one string, its address slice).
func (b brief) expand(g *briefing) hns.Endpoint {
	var buf [80]byte
	ip := g.addr(b.at)
	ep, _ := b.endpoint(string(b.appendText(buf[:0], ip)), []netip.Addr{ip}, g)
	return ep
}

// appendText appends the name, then the MAC if it is conjured, of b's
// endpoint, whose address is ip, to buf.
func (b brief) appendText(buf []byte, ip netip.Addr) []byte {
	buf = ip.AppendTo(append(buf, hns.EndpointNamePrefix...))
	if b.mac >= tabledMACs {
		return buf
	}
	n := len(buf)
	buf = hns.AppendConjuredMAC(buf, ip)
	if b.mac == conjuredUpperMAC {
		hns.UpperHex(buf[n:])
	}
	return buf
}

// endpoint is b's endpoint, its name and conjured MAC read from text, which
// starts with what appendText appended, and its addresses ips. It returns
// the rest of text.
func (b brief) endpoint(text string, ips []netip.Addr, g *briefing) (hns.Endpoint, string) {
	var buf [64]byte
	name := len(hns.EndpointNamePrefix) + len(ips[0].AppendTo(buf[:0]))
	ep := hns.Endpoint{ID: b.id, Name: text[:name], NetworkID: g.networkID, IPs: ips, Remote: true,
		ProviderAddress: g.pas[b.pa]}
	if b.mac >= tabledMACs {
		ep.MAC = g.macs[b.mac-tabledMACs]
		return ep, text[name:]
	}
	mac := name + len(hns.FallbackMAC) // every conjured MAC has its length
	ep.MAC = text[name:mac]
	return ep, text[mac:]
}

// expandAll appends the endpoints bs stand for to eps, their names and
// conjured MACs in one allocation for all and their addresses in another: a
// sync that reads the whole model gets a hundred thousand at 10k services.
func expandAll(eps []hns.Endpoint, bs []brief, g *briefing) []hns.Endpoint {
	text := make([]byte, 0, len(bs)*(len(hns.EndpointNamePrefix)+len("255.255.255.255")+len(hns.FallbackMAC)))
	ips := make([]netip.Addr, len(bs))
	for i, b := range bs {
		ips[i] = g.addr(b.at)
		text = b.appendText(text, ips[i])
	}
	all := string(text)
	for i, b := range bs {
		var ep hns.Endpoint
		ep, all = b.endpoint(all, ips[i:i+1:i+1], g)
		eps = append(eps, ep)
	}
	return eps
}
