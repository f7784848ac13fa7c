package apply

import (
	"cmp"
	"slices"

	"github.com/winproxy/winproxy/agent/hns"
)

// briefIndex finds the model's briefs by address, for the few lookups of a
// sync that programs only what changed: the applier knows each remote
// endpoint's address with its ID. It holds the briefs' places sorted by
// address, 4 bytes a brief where a map from ID cost about 37 (3.7 MB at
// 10k services, built on the first event after every list;
// docs/performance.md, "Where the live heap goes"). Briefs added once it is
// built wait in a short tail, searched in turn, and are merged in when it is
// full. The zero value is an index not built.
type briefIndex struct {
	built bool
	// sorted are places in the briefs, by address; tail the places added
	// since, in the order they were.
	sorted, tail []int32
}

// briefTailMax is how many briefs wait in the tail before a merge. A merge
// moves the places after each waiting one (up to 440 KB at 10k services, in
// as many copies as wait), so it is paid for by this many creates; a lookup
// scans the tail.
const briefTailMax = 64

// find is the place of the brief of ip whose ID is id, building the index
// on first use. The newest briefs are looked at first, the tail's and then
// the last of ip's in sorted: an address whose endpoint was created again
// (a pod's address reused) keeps the briefs of its deleted endpoints until
// the next list, before the live one.
func (x *briefIndex) find(bs *briefList, ip briefAddr, id string) (int, bool) {
	if !x.built {
		x.build(bs)
	}
	for _, p := range slices.Backward(x.tail) {
		if b := bs.at(int(p)); b.at == ip && hns.SameID(b.id, id) {
			return int(p), true
		}
	}
	// The first place after ip's.
	end, _ := slices.BinarySearchFunc(x.sorted, ip, func(p int32, ip briefAddr) int { return cmp.Or(bs.at(int(p)).at.compare(ip), -1) })
	for _, p := range slices.Backward(x.sorted[:end]) {
		b := bs.at(int(p))
		if b.at != ip {
			break
		}
		if hns.SameID(b.id, id) {
			return int(p), true
		}
	}
	return 0, false
}

// build sorts the places of all of bs.
func (x *briefIndex) build(bs *briefList) {
	x.sorted = slices.Grow(x.sorted[:0], bs.len())
	for i := range bs.len() {
		x.sorted = append(x.sorted, int32(i))
	}
	slices.SortFunc(x.sorted, func(p, q int32) int { return bs.at(int(p)).at.compare(bs.at(int(q)).at) })
	x.tail = x.tail[:0]
	x.built = true
}

// added indexes bs[i], just appended, if the index is built.
func (x *briefIndex) added(bs *briefList, i int) {
	if !x.built {
		return
	}
	x.tail = append(x.tail, int32(i))
	if len(x.tail) < briefTailMax {
		return
	}
	// Merge from the back, into the room grown at the end of sorted: each
	// waiting place, the largest first, finds where it goes by a binary
	// search, and the places after it move up in one copy. Nothing is
	// written before it is read, nothing is compared but on the searches'
	// paths, and nothing is allocated but the growth.
	byIP := func(p, q int32) int { return bs.at(int(p)).at.compare(bs.at(int(q)).at) }
	slices.SortFunc(x.tail, byIP)
	end := len(x.sorted) // the places before end are not moved yet
	x.sorted = append(x.sorted, x.tail...)
	for j := len(x.tail) - 1; j >= 0; j-- {
		p := x.tail[j]
		// After every place of an equal address: the waiting ones came later.
		at, _ := slices.BinarySearchFunc(x.sorted[:end], p, func(q, p int32) int {
			if byIP(q, p) > 0 {
				return 1
			}
			return -1
		})
		copy(x.sorted[at+j+1:], x.sorted[at:end])
		x.sorted[at+j] = p
		end = at
	}
	x.tail = x.tail[:0]
}

// removed follows a compaction of the briefs that took out the places gone
// (in order): every other brief moves down by as many places as were taken
// out before it and keeps its order, so the index stays sorted without
// being sorted again (about 25 ms at 10k services, at the first lookup
// after each compaction).
func (x *briefIndex) removed(gone []int32) {
	if !x.built || len(gone) == 0 {
		return
	}
	x.sorted, x.tail = movedDown(x.sorted, gone), movedDown(x.tail, gone)
}

// movedDown drops the places gone (sorted) from ps, in place, and moves the
// others down past them.
func movedDown(ps, gone []int32) []int32 {
	kept := ps[:0]
	for _, p := range ps {
		if before, found := slices.BinarySearch(gone, p); !found {
			kept = append(kept, p-int32(before))
		}
	}
	return kept
}
