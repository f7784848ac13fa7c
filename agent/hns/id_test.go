package hns

import (
	"fmt"
	"testing"
)

func TestSameIDs(t *testing.T) {
	many := func(n int, f func(i int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	id := func(i int) string { return fmt.Sprintf("8c1a6f2e-4a7b-4c1d-9e2f-%012d", i) }
	upper := func(i int) string { return string(IDOf(id(i))) }
	reversed := func(n int) func(int) string { return func(i int) string { return upper(n - 1 - i) } }
	for _, tc := range []struct {
		name string
		a, b []string
		want bool
	}{
		{"both empty", nil, []string{}, true},
		{"same order", []string{"a", "b"}, []string{"a", "b"}, true},
		{"another order and case", []string{"a", "B", "c"}, []string{"C", "b", "A"}, true},
		{"one more", []string{"a", "b"}, []string{"a", "b", "c"}, false},
		{"one other", []string{"a", "b"}, []string{"a", "c"}, false},
		// As multisets: a list with a duplicate is not the list without it plus another ID.
		{"a duplicate against two", []string{"a", "a", "b"}, []string{"a", "b", "b"}, false},
		{"duplicates in another order", []string{"a", "b", "a"}, []string{"A", "a", "B"}, true},
		// Past smallIDs, compared sorted.
		{"long, reversed and upper-cased", many(smallIDs+8, id), many(smallIDs+8, reversed(smallIDs+8)), true},
		{"long, one other", many(smallIDs+8, id), append(many(smallIDs+7, id), "other"), false},
		{"longest matched pairwise, reversed", many(smallIDs, id), many(smallIDs, reversed(smallIDs)), true},
	} {
		if got := SameIDs(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: SameIDs(%v, %v) = %v, want %v", tc.name, tc.a, tc.b, got, tc.want)
		}
		if got := SameIDs(tc.b, tc.a); got != tc.want {
			t.Errorf("%s, the other way: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// BenchmarkSameIDs compares a load balancer's ten backends with the same IDs in another order
// and case, as after HNS answered a create.
func BenchmarkSameIDs(b *testing.B) {
	a, other := make([]string, 10), make([]string, 10)
	for i := range a {
		a[i] = fmt.Sprintf("8c1a6f2e-4a7b-4c1d-9e2f-%012d", i)
		other[9-i] = string(IDOf(a[i]))
	}
	b.ReportAllocs()
	for b.Loop() {
		if !SameIDs(a, other) {
			b.Fatal("different")
		}
	}
}
