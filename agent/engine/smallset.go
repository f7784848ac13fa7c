package engine

import (
	"net/netip"
	"slices"

	"github.com/winproxy/winproxy/agent/hns"
)

// smallSet is a set that holds its first element inline. The incremental
// engine keeps one per frontend, nearly all with one element: a map or a
// slice each would cost more than the rest of its state, so the rest is
// behind one pointer and the zero value (never a claim) means empty.
type smallSet[T comparable] struct {
	first T
	more  *[]T
}

func (s *smallSet[T]) add(v T) {
	var zero T
	switch {
	case s.first == zero:
		s.first = v
	case s.first == v:
	case s.more == nil:
		s.more = &[]T{v}
	case !slices.Contains(*s.more, v):
		*s.more = append(*s.more, v)
	}
}

func (s *smallSet[T]) remove(v T) {
	var zero T
	if v == zero {
		return
	}
	if s.first == v {
		s.first = zero
		if s.more != nil {
			more := *s.more
			s.first, more = more[len(more)-1], more[:len(more)-1]
			s.setMore(more)
		}
		return
	}
	if s.more != nil {
		if i := slices.Index(*s.more, v); i >= 0 {
			s.setMore(slices.Delete(*s.more, i, i+1))
		}
	}
}

func (s *smallSet[T]) setMore(more []T) {
	if len(more) == 0 {
		s.more = nil
	} else {
		*s.more = more
	}
}

func (s smallSet[T]) empty() bool {
	var zero T
	return s.first == zero
}

// all lists the elements in a new slice, which the caller may keep while
// it changes the set.
func (s smallSet[T]) all() []T {
	if s.empty() {
		return nil
	}
	if s.more == nil {
		return []T{s.first}
	}
	return append([]T{s.first}, *s.more...)
}

// lbContributions are the contributions to one LB key: its own service's
// (contributed again, it is replaced), or each sharing service's for a
// shared (health-check) key.
type lbContributions struct {
	first contributedLB
	more  []contributedLB
}

// contributedLB is one service's contribution to a key: its load balancer
// without the key, which the map of contributions is keyed by already.
type contributedLB struct {
	service string
	lb      lbBody
}

// lbBody is a LoadBalancer without its key: 64 bytes where the whole is 136,
// for each of 20,000 load balancers at 10k services (1.4 MB).
type lbBody struct {
	SourceVIP        netip.Addr
	Backends         []Backend
	Flags            hns.LBFlags
	PortMappingFlags hns.PortMappingFlags
	Distribution     hns.DistributionType
	InternalPort     uint16
	Recreate         bool
}

func bodyOf(lb LoadBalancer) lbBody {
	return lbBody{SourceVIP: lb.SourceVIP, Backends: lb.Backends, Flags: lb.Flags, PortMappingFlags: lb.PortMappingFlags,
		Distribution: lb.Distribution, InternalPort: lb.InternalPort, Recreate: lb.Recreate}
}

func (b lbBody) equal(o lbBody) bool {
	return b.SourceVIP == o.SourceVIP && b.Flags == o.Flags && b.PortMappingFlags == o.PortMappingFlags &&
		b.Distribution == o.Distribution && b.InternalPort == o.InternalPort && b.Recreate == o.Recreate &&
		slices.Equal(b.Backends, o.Backends)
}

// with is the load balancer of key k whose body b is.
func (b lbBody) with(k LBKey) LoadBalancer {
	return LoadBalancer{Key: k, SourceVIP: b.SourceVIP, Backends: b.Backends, Flags: b.Flags, PortMappingFlags: b.PortMappingFlags,
		Distribution: b.Distribution, InternalPort: b.InternalPort, Recreate: b.Recreate}
}

func (l *lbContributions) set(service string, body lbBody) {
	switch l.first.service {
	case "", service:
		l.first = contributedLB{service, body}
	default:
		if i := slices.IndexFunc(l.more, func(c contributedLB) bool { return c.service == service }); i >= 0 {
			l.more[i].lb = body
		} else {
			l.more = append(l.more, contributedLB{service, body})
		}
	}
}

func (l *lbContributions) remove(service string) {
	if l.first.service == service {
		if n := len(l.more); n > 0 {
			l.first, l.more = l.more[n-1], l.more[:n-1]
		} else {
			l.first = contributedLB{}
		}
		return
	}
	l.more = slices.DeleteFunc(l.more, func(c contributedLB) bool { return c.service == service })
}

func (l lbContributions) empty() bool { return l.first.service == "" }

// of is service's contribution, or the zero body if it made none.
func (l lbContributions) of(service string) lbBody {
	if l.first.service == service && service != "" {
		return l.first.lb
	}
	for _, c := range l.more {
		if c.service == service {
			return c.lb
		}
	}
	return lbBody{}
}

// pick is the contribution of the smallest service name, so that services
// sharing a health-check LB agree whatever the order of updates.
func (l lbContributions) pick() contributedLB {
	p := l.first
	for _, c := range l.more {
		if c.service < p.service {
			p = c
		}
	}
	return p
}
