package addrmap

import (
	"maps"
	"math/rand/v2"
	"net/netip"
	"testing"
)

// addrs are addresses that a careless key would confuse: an IPv4 address and the same one
// mapped into IPv6, an IPv6 address with and without a zone, the lowest and highest IPv4
// addresses, and the invalid address.
var addrs = []netip.Addr{
	netip.MustParseAddr("10.244.1.7"),
	netip.MustParseAddr("::ffff:10.244.1.7"),
	netip.MustParseAddr("fe80::1"),
	netip.MustParseAddr("fe80::1%eth0"),
	netip.MustParseAddr("fd00:10:244:1::7"),
	netip.MustParseAddr("0.0.0.0"),
	netip.MustParseAddr("255.255.255.255"),
	netip.MustParseAddr("::"),
	{},
}

// TestMapIsAGoMap: after any sequence of sets and deletes, a Map holds exactly what a Go map
// keyed by netip.Addr holds, address for address, with no two addresses sharing a key.
func TestMapIsAGoMap(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Map[int]
	}{
		{"the zero value", Map[int]{}},
		{"made with room", Make[int](4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, want := tc.m, map[netip.Addr]int{}
			rnd := rand.New(rand.NewPCG(1, 2))
			for step := range 2000 {
				ip := addrs[rnd.IntN(len(addrs))]
				if rnd.IntN(3) == 0 {
					m.Delete(ip)
					delete(want, ip)
				} else {
					m.Set(ip, step)
					want[ip] = step
				}
				for _, ip := range addrs {
					got, ok := m.Get(ip)
					w, wok := want[ip]
					if got != w || ok != wok || m.At(ip) != w {
						t.Fatalf("step %d: %s is %d, %v (At %d), want %d, %v", step, ip, got, ok, m.At(ip), w, wok)
					}
				}
				if got := maps.Collect(m.All()); m.Len() != len(want) || !maps.Equal(got, want) {
					t.Fatalf("step %d: the map yields %v (Len %d), want %v", step, got, m.Len(), want)
				}
			}
			m.Clear()
			if m.Len() != 0 {
				t.Errorf("%d addresses left after Clear", m.Len())
			}
		})
	}
}

// TestDeletingWhileRanging: an address may be deleted as it is yielded, and a range may stop.
func TestDeletingWhileRanging(t *testing.T) {
	var m Map[bool]
	for _, ip := range addrs {
		m.Set(ip, true)
	}
	for ip := range m.All() {
		m.Delete(ip)
	}
	if m.Len() != 0 {
		t.Errorf("%d addresses left after deleting each as it was yielded", m.Len())
	}
	for _, ip := range addrs {
		m.Set(ip, true)
	}
	n := 0
	for range m.All() {
		if n++; n == 2 {
			break
		}
	}
	if n != 2 {
		t.Errorf("a range stopped after %d addresses, want 2", n)
	}
}
