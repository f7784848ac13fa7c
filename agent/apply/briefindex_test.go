package apply

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// TestBriefIndexFindsWhatAScanFinds: whatever the order briefs came in, how
// many came after the index was built (merged in or still waiting), and
// however many share an address, the index finds a brief by address and ID
// exactly when a scan of all the briefs does, in either case of the ID.
func TestBriefIndexFindsWhatAScanFinds(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before are the briefs there when the index is built, after those added since.
		before, after int
		// addrs is how many addresses they spread over: fewer than briefs means shared ones.
		addrs int
	}{
		{"empty", 0, 0, 1},
		{"built once, each address once", 500, 0, 1000},
		{"added into an empty index", 0, briefTailMax - 1, 1000},
		{"added, merged once", 300, briefTailMax, 1000},
		{"added, merged several times with some waiting", 300, 5*briefTailMax + 7, 1000},
		{"addresses shared by several briefs", 200, 3*briefTailMax + 1, 50},
		{"IPv4 and IPv6 together", 400, 2 * briefTailMax, 2000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(uint64(tc.before), uint64(tc.after)))
			addr := func() netip.Addr {
				n := rnd.IntN(tc.addrs)
				if tc.name == "IPv4 and IPv6 together" && n%2 == 1 {
					// Four nodes' first 96 bits, interleaved: several places in the briefing's table.
					return netip.AddrFrom16([16]byte{0xfd, 8: byte(n % 4), 15: byte(n), 14: byte(n >> 8)})
				}
				return netip.AddrFrom4([4]byte{10, 244, byte(n >> 8), byte(n)})
			}
			var bs []brief
			var list briefList
			var x briefIndex
			g := newBriefing("NET")
			briefAddrOf := func(ip netip.Addr) briefAddr {
				at, ok := g.addrOf(ip, true)
				if !ok {
					t.Fatalf("%s held by no brief", ip)
				}
				return at
			}
			for i := range tc.before + tc.after {
				if i == tc.before {
					x.build(&list)
				}
				b := brief{id: fmt.Sprintf("%08X-0000-0000-0000-000000000000", i), at: briefAddrOf(addr())}
				bs = append(bs, b)
				x.added(&list, list.add(b))
			}
			check := func(step string) {
				t.Helper()
				scan := func(ip briefAddr, id string) (int, bool) {
					for i, b := range bs {
						if b.at == ip && strings.EqualFold(b.id, id) {
							return i, true
						}
					}
					return 0, false
				}
				for i, b := range bs {
					for _, id := range []string{b.id, strings.ToLower(b.id)} {
						if got, ok := x.find(&list, b.at, id); !ok || got != i {
							t.Fatalf("%s: brief %d (%s at %s) found at %d, %v", step, i, id, g.addr(b.at), got, ok)
						}
					}
					// The same ID at another address, and another ID at the same one, are not it.
					other := briefAddrOf(addr())
					want, wantOK := scan(other, b.id)
					if got, ok := x.find(&list, other, b.id); ok != wantOK || got != want {
						t.Fatalf("%s: %s at %s found at %d, %v; a scan finds %d, %v", step, b.id, g.addr(other), got, ok, want, wantOK)
					}
					if _, ok := x.find(&list, b.at, "FFFFFFFF-0000-0000-0000-000000000000"); ok {
						t.Fatalf("%s: an ID no brief has found at %s", step, g.addr(b.at))
					}
				}
				if len(x.tail) >= briefTailMax {
					t.Errorf("%s: %d briefs wait in the tail, at most %d should", step, len(x.tail), briefTailMax-1)
				}
			}
			check("added")
			// A compaction takes out every third brief: the index follows the places that moved.
			gone := map[string]bool{}
			for i, b := range bs {
				if i%3 == 1 {
					gone[b.id] = true
				}
			}
			x.removed(list.deleteFunc(func(b brief) bool { return gone[b.id] }))
			bs = slices.DeleteFunc(bs, func(b brief) bool { return gone[b.id] })
			check("compacted")
			// And more come after it, into the tail and merged.
			for i := range briefTailMax + 3 {
				b := brief{id: fmt.Sprintf("%08X-0000-0000-0000-0000000000FF", i), at: briefAddrOf(addr())}
				bs = append(bs, b)
				x.added(&list, list.add(b))
			}
			check("added after the compaction")
		})
	}
}

// TestBriefListIsASlice: after any appends and compactions, across chunks, a
// briefList holds what a slice would, in the same places, and a compaction
// lets go of the chunks it empties.
func TestBriefListIsASlice(t *testing.T) {
	var list briefList
	var want []brief
	n := 0
	add := func(count int) {
		for range count {
			b := brief{id: fmt.Sprint(n), at: briefAddr{lo: uint32(n)}}
			n++
			if got := list.add(b); got != len(want) {
				t.Fatalf("brief %d added at %d", len(want), got)
			}
			want = append(want, b)
		}
	}
	del := func(drop func(i int) bool) {
		gone := map[string]bool{}
		for i, b := range want {
			if drop(i) {
				gone[b.id] = true
			}
		}
		list.deleteFunc(func(b brief) bool { return gone[b.id] })
		want = slices.DeleteFunc(want, func(b brief) bool { return gone[b.id] })
	}
	same := func(when string) {
		t.Helper()
		if list.len() != len(want) {
			t.Fatalf("%s: %d briefs, want %d", when, list.len(), len(want))
		}
		for i, b := range want {
			if *list.at(i) != b {
				t.Fatalf("%s: brief %d is %+v, want %+v", when, i, *list.at(i), b)
			}
		}
		if chunks := (len(want) + briefChunk - 1) / briefChunk; len(list.chunks) != chunks {
			t.Fatalf("%s: %d chunks for %d briefs, want %d", when, len(list.chunks), len(want), chunks)
		}
	}
	same("empty")
	add(2*briefChunk + 5)
	same("three chunks")
	del(func(i int) bool { return i%3 == 0 })
	same("a third deleted")
	add(briefChunk)
	same("added after a compaction")
	del(func(i int) bool { return i >= briefChunk })
	same("all but the first chunk deleted")
	add(1)
	same("added to a list of full chunks")
	del(func(int) bool { return true })
	same("all deleted")
	add(3)
	same("added to an emptied list")
}
