package engine

import (
	"net/netip"
	"slices"

	"github.com/winproxy/winproxy/agent/addrmap"
)

// lookers are, per address, the services that looked it up among the local
// HNS endpoints: when a local endpoint with that address comes or goes, they
// must be computed again (Incremental.markIP). Nearly every backend address
// is looked up by exactly one service (100,000 at 10k services), so each
// address holds one looker inline in its addrUse, as a number instead of the
// service's key: an entry of 12 bytes without a pointer, where one with a set
// of keys (smallSet) took 32 with two pointers, which made the map of
// addresses the engine's largest (7.4 MB at 10k services) and the collector
// scan it. As in a smallSet, the first is inline; the few addresses several
// services look up (pods behind two Services) keep the others in more.
type lookers struct {
	// names are the services' keys by number (names[n-1]); a number is
	// taken by a contribution that looks an address up and given back by
	// its retraction, for the next to take (free).
	names []string
	free  []int32
	more  addrmap.Map[[]int32]
}

// take numbers service k; give(n) frees the number for another service.
func (l *lookers) take(k string) int32 {
	if n := len(l.free); n > 0 {
		num := l.free[n-1]
		l.free = l.free[:n-1]
		l.names[num-1] = k
		return num
	}
	l.names = append(l.names, k)
	return int32(len(l.names))
}

func (l *lookers) give(num int32) {
	l.names[num-1] = ""
	l.free = append(l.free, num)
}

// add records that service num looked up ip, whose use is u.
func (l *lookers) add(ip netip.Addr, u *addrUse, num int32) {
	switch u.looker {
	case 0:
		u.looker = num
	case num:
	default:
		more := l.more.At(ip)
		if !slices.Contains(more, num) {
			l.more.Set(ip, append(more, num))
		}
	}
}

// remove takes back that service num looked up ip, whose use is u: an
// address's first looker is never 0 while it has others.
func (l *lookers) remove(ip netip.Addr, u *addrUse, num int32) {
	if l.more.Len() == 0 {
		if u.looker == num {
			u.looker = 0
		}
		return
	}
	more := l.more.At(ip)
	if u.looker == num {
		if len(more) == 0 {
			u.looker = 0
			return
		}
		u.looker, more = more[len(more)-1], more[:len(more)-1]
	} else if i := slices.Index(more, num); i >= 0 {
		more = slices.Delete(more, i, i+1)
	}
	if len(more) == 0 {
		l.more.Delete(ip)
	} else {
		l.more.Set(ip, more)
	}
}

// of lists the keys of the services that looked up ip, whose use is u.
func (l *lookers) of(ip netip.Addr, u addrUse) []string {
	if u.looker == 0 {
		return nil
	}
	keys := []string{l.names[u.looker-1]}
	for _, num := range l.more.At(ip) {
		keys = append(keys, l.names[num-1])
	}
	return keys
}
