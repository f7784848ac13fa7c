package apply

import (
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/winproxy/winproxy/agent/hns"
)

// TestBriefLosesNothing: an endpoint is held in brief only when expanding
// the brief gives it back field for field, alone and among others.
func TestBriefLosesNothing(t *testing.T) {
	const network = "NET"
	ip4, ip6 := netip.MustParseAddr("10.244.2.7"), netip.MustParseAddr("fd00:10:244:2::7")
	ip6b, mapped, zoned := netip.MustParseAddr("fd00:10:244:3::7"), netip.MustParseAddr("::ffff:10.244.2.7"), netip.MustParseAddr("fd00:10:244:2::7%eth0")
	pa := netip.MustParseAddr("172.18.0.3")
	// remote is the endpoint the agent creates for ip, as HNS answers it.
	remote := func(ip netip.Addr, change func(*hns.Endpoint)) hns.Endpoint {
		ep := hns.Endpoint{ID: "0AB1C2D3-0000-4000-8000-000000000001", Name: hns.OwnedEndpointName(ip),
			NetworkID: network, IPs: []netip.Addr{ip}, MAC: hns.ConjureMAC(ip), Remote: true, ProviderAddress: pa}
		if change != nil {
			change(&ep)
		}
		return ep
	}
	cases := []struct {
		name string
		ep   hns.Endpoint
		// brief is whether the endpoint is held in brief.
		brief bool
	}{
		{"the agent's, overlay", remote(ip4, nil), true},
		{"the agent's, IPv6", remote(ip6, nil), true},
		{"the agent's, no provider address (L2Bridge)", remote(ip4, func(ep *hns.Endpoint) { ep.ProviderAddress = netip.Addr{} }), true},
		{"lower-case ID", remote(ip4, func(ep *hns.Endpoint) { ep.ID = "0ab1c2d3-0000-4000-8000-000000000001" }), true},
		{"foreign name", remote(ip4, func(ep *hns.Endpoint) { ep.Name = "cni-remote" }), false},
		{"name of another address", remote(ip4, func(ep *hns.Endpoint) { ep.Name = hns.OwnedEndpointName(ip6) }), false},
		{"MAC answered upper case", remote(ip4, func(ep *hns.Endpoint) { ep.MAC = "02-11-0A-F4-02-07" }), true},
		{"MAC answered upper case, IPv6", remote(ip6, func(ep *hns.Endpoint) { ep.MAC = strings.ToUpper(hns.ConjureMAC(ip6)) }), true},
		// Any other MAC is held by its place in the briefing's table.
		{"MAC in mixed case", remote(ip4, func(ep *hns.Endpoint) { ep.MAC = "02-11-0a-F4-02-07" }), true},
		{"the host's MAC (a service VIP's endpoint)", remote(ip4, func(ep *hns.Endpoint) { ep.MAC = "00-15-5D-01-02-03" }), true},
		{"the host's MAC, IPv6", remote(ip6, func(ep *hns.Endpoint) { ep.MAC = "00-15-5D-01-02-03" }), true},
		{"no MAC", remote(ip4, func(ep *hns.Endpoint) { ep.MAC = "" }), true},
		{"prefix length", remote(ip4, func(ep *hns.Endpoint) { ep.PrefixLength = 32 }), false},
		{"two addresses", remote(ip4, func(ep *hns.Endpoint) { ep.IPs = []netip.Addr{ip4, ip6} }), false},
		{"local", remote(ip4, func(ep *hns.Endpoint) { ep.Remote = false }), false},
		// An invalid address prints as "invalid IP" in a name, and as nothing when appended.
		{"invalid address", remote(ip4, func(ep *hns.Endpoint) {
			ep.IPs, ep.Name, ep.MAC = []netip.Addr{{}}, hns.EndpointNamePrefix, hns.FallbackMAC
		}), false},
		{"network ID in another case", remote(ip4, func(ep *hns.Endpoint) { ep.NetworkID = "net" }), false},
		// An IPv6 address is held as its last 32 bits and the place of its first 96: another
		// node's pods, an IPv4-mapped form of ip4, which must not come back as ip4.
		{"the agent's, IPv6 on another node", remote(ip6b, nil), true},
		{"the agent's, IPv4-mapped IPv6", remote(mapped, nil), true},
		{"an address with a zone", remote(zoned, nil), false},
	}
	addrs := cmpopts.EquateComparable(netip.Addr{})
	var all []brief
	var want []hns.Endpoint
	g := newBriefing(network)
	for _, c := range cases {
		b, ok := briefOf(c.ep, g)
		if ok != c.brief {
			t.Errorf("%s: held in brief %v, want %v", c.name, ok, c.brief)
		}
		if !ok {
			continue
		}
		if diff := gocmp.Diff(c.ep, b.expand(g), addrs); diff != "" {
			t.Errorf("%s: the brief expands to another endpoint (-was +expanded):\n%s", c.name, diff)
		}
		all, want = append(all, b), append(want, c.ep)
	}
	if diff := gocmp.Diff(want, expandAll(nil, all, g), addrs); diff != "" {
		t.Errorf("expandAll differs from the endpoints (-was +expanded):\n%s", diff)
	}
}

// TestBriefKnowsEveryEndpointField: a field added to hns.Endpoint must be
// held by brief or checked by briefOf, or a brief would drop it.
func TestBriefKnowsEveryEndpointField(t *testing.T) {
	var names []string
	for f := range reflect.TypeFor[hns.Endpoint]().Fields() {
		names = append(names, f.Name)
	}
	want := []string{"ID", "Name", "NetworkID", "IPs", "PrefixLength", "MAC", "Remote", "ProviderAddress"}
	if diff := gocmp.Diff(want, names); diff != "" {
		t.Errorf("hns.Endpoint's fields changed; make brief and briefOf hold or check the new ones, then this list (-brief knows +now):\n%s", diff)
	}
}

// TestBriefingHoldsEachProviderAddressOnce: briefs of backends on the same
// node share one entry of the table, briefs with the same MAC (the host's,
// of service VIPs' endpoints) another, and each expands to its own node's
// address and its own MAC.
func TestBriefingHoldsEachProviderAddressOnce(t *testing.T) {
	const network = "NET"
	node1, node2 := netip.MustParseAddr("172.18.0.3"), netip.MustParseAddr("172.18.0.4")
	g := newBriefing(network)
	var eps []hns.Endpoint
	var bs []brief
	const hostMAC, otherMAC = "00-15-5D-01-02-03", "00-15-5D-0A-0B-0C"
	for i, pa := range []netip.Addr{node1, node2, node1, {}, node1, node2, node1} {
		ip := netip.AddrFrom4([4]byte{10, 244, byte(i), 7})
		mac := hns.ConjureMAC(ip)
		switch i {
		case 4, 6:
			mac = hostMAC
		case 5:
			mac = otherMAC
		}
		ep := hns.Endpoint{ID: "0AB1C2D3-0000-4000-8000-00000000000" + string(rune('1'+i)), Name: hns.OwnedEndpointName(ip),
			NetworkID: network, IPs: []netip.Addr{ip}, MAC: mac, Remote: true, ProviderAddress: pa}
		b, ok := briefOf(ep, g)
		if !ok {
			t.Fatalf("endpoint %d not held in brief", i)
		}
		eps, bs = append(eps, ep), append(bs, b)
	}
	if want := []netip.Addr{node1, node2, {}}; !slices.Equal(g.pas, want) {
		t.Errorf("the table holds %v, want %v", g.pas, want)
	}
	if want := []string{hostMAC, otherMAC}; !slices.Equal(g.macs, want) {
		t.Errorf("the MACs' table holds %v, want %v", g.macs, want)
	}
	if diff := gocmp.Diff(eps, expandAll(nil, bs, g), cmpopts.EquateComparable(netip.Addr{})); diff != "" {
		t.Errorf("the briefs expand to other endpoints (-was +expanded):\n%s", diff)
	}
}
