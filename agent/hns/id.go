package hns

import (
	"slices"
	"strings"
)

// ID is an HNS object's ID in canonical form, for comparing and indexing.
// HNS names objects by GUID and parses GUIDs in either case, so "ab12…"
// and "AB12…" are one object; which case an answer uses depends on the
// call and the Windows release. Objects keep the ID as HNS spelt it (calls
// pass it back unchanged); everything that compares or indexes IDs goes
// through ID, so case folding lives here and nowhere else.
type ID string

// IDOf is the canonical form of an HNS ID.
func IDOf(id string) ID { return ID(strings.ToUpper(id)) }

// SameID reports whether two IDs name the same object.
func SameID(a, b string) bool { return strings.EqualFold(a, b) }

// SameIDs compares lists of IDs as sets: HNS keeps no order. Lists that
// HNS kept in the order it was given are usually identical, which is
// checked first without copying them; short lists (up to smallIDs, most
// load balancers' backends) are matched pairwise without copying either.
func SameIDs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	if slices.Equal(a, b) {
		return true
	}
	if len(a) <= smallIDs {
		return sameSmall(a, b)
	}
	norm := func(ids []string) []ID {
		out := make([]ID, len(ids))
		for i, id := range ids {
			out[i] = IDOf(id)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(norm(a), norm(b))
}

// smallIDs is the longest list SameIDs matches pairwise: up to it, n² case-folding comparisons
// cost less than upper-casing, copying and sorting both lists (an event's changed load balancer
// is compared with the one HNS holds at every sync). Measured with IDs that share all but their
// last characters, the worst case for a comparison, the two cross between 12 and 16; GUIDs HNS
// makes mostly differ in their first.
const smallIDs = 16

// sameSmall matches each ID of a with one of b not matched yet.
func sameSmall(a, b []string) bool {
	var matched [smallIDs]bool
	for _, id := range a {
		found := false
		for j, other := range b {
			if !matched[j] && SameID(id, other) {
				matched[j], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
