package engine

import "slices"

// smallSet is a set that holds its first element inline. The incremental
// engine keeps one per address and per frontend, nearly all with one
// element: a map or a slice each would cost more than the rest of its
// state.
type smallSet[T comparable] struct {
	first T
	has   bool
	more  []T
}

func (s *smallSet[T]) add(v T) {
	switch {
	case !s.has:
		s.first, s.has = v, true
	case s.first != v && !slices.Contains(s.more, v):
		s.more = append(s.more, v)
	}
}

func (s *smallSet[T]) remove(v T) {
	if s.has && s.first == v {
		if n := len(s.more); n > 0 {
			s.first, s.more = s.more[n-1], s.more[:n-1]
		} else {
			var zero T
			s.first, s.has = zero, false
		}
		return
	}
	if i := slices.Index(s.more, v); i >= 0 {
		s.more = slices.Delete(s.more, i, i+1)
	}
}

func (s smallSet[T]) empty() bool { return !s.has }

// all lists the elements in a new slice, which the caller may keep while
// it changes the set.
func (s smallSet[T]) all() []T {
	if !s.has {
		return nil
	}
	if len(s.more) == 0 {
		return []T{s.first}
	}
	return append([]T{s.first}, s.more...)
}

// lbContributions are the contributions to one LB key: its own service's
// (contributed again, it is replaced), or each sharing service's for a
// shared (health-check) key.
type lbContributions struct {
	first contributedLB
	more  []contributedLB
}

type contributedLB struct {
	service string
	lb      LoadBalancer
}

func (l *lbContributions) set(service string, lb LoadBalancer) {
	switch l.first.service {
	case "", service:
		l.first = contributedLB{service, lb}
	default:
		if i := slices.IndexFunc(l.more, func(c contributedLB) bool { return c.service == service }); i >= 0 {
			l.more[i].lb = lb
		} else {
			l.more = append(l.more, contributedLB{service, lb})
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
