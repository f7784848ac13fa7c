package engine

import (
	"net/netip"
	"slices"
	"testing"
)

// TestLookersKeepEveryLooker drives one address's lookers through a sequence of adds and removes
// (a second add, the first looker going while others remain, the last going) and checks each step
// against a plain list; the engine's random tests check every address against the services'
// contributions (checkAddrs).
func TestLookersKeepEveryLooker(t *testing.T) {
	ip := netip.MustParseAddr("10.0.0.1")
	steps := []struct {
		add  bool
		name string
	}{
		{true, "a"}, {true, "b"}, {true, "c"}, {true, "b"}, // b twice: a set
		{false, "a"}, // the first goes: the last other takes its place
		{false, "b"}, {true, "a"}, {false, "c"}, {false, "a"},
	}
	var l lookers
	var u addrUse
	nums := map[string]int32{}
	var want []string
	for i, s := range steps {
		if _, ok := nums[s.name]; !ok {
			nums[s.name] = l.take(s.name)
		}
		if s.add {
			l.add(ip, &u, nums[s.name])
			if !slices.Contains(want, s.name) {
				want = append(want, s.name)
			}
		} else {
			l.remove(ip, &u, nums[s.name])
			want = slices.DeleteFunc(want, func(n string) bool { return n == s.name })
		}
		got := l.of(ip, u)
		if !sameElements(got, want) {
			t.Fatalf("step %d: lookers %q, want %q", i, got, want)
		}
		if _, more := l.more.Get(ip); more && len(want) < 2 {
			t.Fatalf("step %d: %d lookers, yet others are kept", i, len(want))
		}
	}
	if !u.unused() {
		t.Fatalf("no looker left, yet the address is used: %+v", u)
	}
	// A number given back is taken again before a new one is made.
	l.give(nums["b"])
	if n := l.take("d"); n != nums["b"] || l.names[n-1] != "d" {
		t.Fatalf("took %d (%q), want the freed %d", n, l.names[n-1], nums["b"])
	}
}
