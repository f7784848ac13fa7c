package engine

import (
	"slices"
	"testing"
)

// TestSmallSet drives a smallSet and a map through the same adds and removes: they hold the
// same elements after every step, whichever element is inline and however many are behind the
// pointer.
func TestSmallSet(t *testing.T) {
	steps := []struct {
		add bool
		v   string
	}{
		{true, "a"}, {true, "a"}, {false, "b"}, {true, "b"}, {true, "c"}, {true, "b"},
		{false, "a"}, // the inline one goes: the last of the rest takes its place
		{false, "x"}, {false, ""}, {true, "d"}, {false, "b"}, {false, "c"}, {false, "d"},
		{true, "e"}, {false, "e"}, {true, "f"},
	}
	var s smallSet[string]
	want := map[string]bool{}
	for i, st := range steps {
		if st.add {
			s.add(st.v)
			want[st.v] = true
		} else {
			s.remove(st.v)
			delete(want, st.v)
		}
		got := s.all()
		slices.Sort(got)
		var w []string
		for v := range want {
			w = append(w, v)
		}
		slices.Sort(w)
		if !slices.Equal(got, w) || s.empty() != (len(w) == 0) {
			t.Fatalf("step %d (%+v): set holds %v (empty %v), want %v", i, st, got, s.empty(), w)
		}
	}
}
