// Package addrmap is a map keyed by IP address that holds an IPv4 address in 4 bytes.
//
// A netip.Addr is 24 bytes: 128 bits of address and a pointer for its zone. The agent keeps maps
// with an entry for every remote endpoint of the cluster (100,000 at 10k Services): the engine's
// use of each address and the applier's endpoint ID for each. Keyed by netip.Addr, their keys
// alone are 2.4 MB each, and every key holds a pointer the garbage collector reads at each cycle.
// Here an IPv4 address, nearly every address of nearly every cluster, is a 4-byte key without a
// pointer; any other address (IPv6, IPv4-mapped IPv6, one with a zone) keeps its netip.Addr, so
// no two addresses share a key (docs/performance.md, "Where the live heap goes").
package addrmap

import (
	"iter"
	"net/netip"
)

// Map maps IP addresses to values of V. The zero value is an empty map ready to use. A copy of a
// Map shares what both hold, but an address of a family the original held none of goes to the
// copy only: keep a Map in one place and reach it through a pointer.
type Map[V any] struct {
	v4    map[uint32]V
	other map[netip.Addr]V
}

// Make is an empty Map with room for n IPv4 addresses.
func Make[V any](n int) Map[V] { return Map[V]{v4: make(map[uint32]V, n)} }

// Key4 is the 4-byte form of ip that the maps key it by, if ip is an IPv4 address (Addr4 gives
// it back): for whoever else holds many addresses.
func Key4(ip netip.Addr) (uint32, bool) {
	if !ip.Is4() {
		return 0, false
	}
	b := ip.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]), true
}

// Addr4 is the IPv4 address whose 4-byte form k is.
func Addr4(k uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(k >> 24), byte(k >> 16), byte(k >> 8), byte(k)})
}

// Get returns ip's value, and whether ip has one.
func (m Map[V]) Get(ip netip.Addr) (V, bool) {
	var v V
	var ok bool
	if k, is4 := Key4(ip); is4 {
		v, ok = m.v4[k]
	} else {
		v, ok = m.other[ip]
	}
	return v, ok
}

// At returns ip's value, the zero value if it has none.
func (m Map[V]) At(ip netip.Addr) V {
	v, _ := m.Get(ip)
	return v
}

// Set sets ip's value.
func (m *Map[V]) Set(ip netip.Addr, v V) {
	if k, is4 := Key4(ip); is4 {
		if m.v4 == nil {
			m.v4 = map[uint32]V{}
		}
		m.v4[k] = v
		return
	}
	if m.other == nil {
		m.other = map[netip.Addr]V{}
	}
	m.other[ip] = v
}

// Delete removes ip's value, if it has one.
func (m Map[V]) Delete(ip netip.Addr) {
	if k, is4 := Key4(ip); is4 {
		delete(m.v4, k)
	} else {
		delete(m.other, ip)
	}
}

// Len is how many addresses have a value.
func (m Map[V]) Len() int { return len(m.v4) + len(m.other) }

// Clear removes every value, keeping the storage.
func (m Map[V]) Clear() {
	clear(m.v4)
	clear(m.other)
}

// All yields every address with its value, in no order. Deleting the address being yielded is
// safe, as in a range over a Go map.
func (m Map[V]) All() iter.Seq2[netip.Addr, V] {
	return func(yield func(netip.Addr, V) bool) {
		for k, v := range m.v4 {
			if !yield(Addr4(k), v) {
				return
			}
		}
		for ip, v := range m.other {
			if !yield(ip, v) {
				return
			}
		}
	}
}
