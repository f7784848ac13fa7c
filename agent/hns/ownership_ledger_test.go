package hns

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The journal never holds more than twice as many lines as live entries
// (or the floor, for a small ledger): churn is compacted away as it comes,
// not only when the agent restarts.
func TestLedgerCompactsPastTwiceTheLiveSet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "owned")
	l, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lines := func() int {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "\n")
	}
	proof := []string{strings.Repeat("A", fingerprintLen)}
	check := func(when string) {
		t.Helper()
		if n, bound := lines(), max(compactFactor*len(l.IDs()), minCompactLines); n > bound {
			t.Fatalf("%s: %d journal lines for %d entries, want at most %d", when, n, len(l.IDs()), bound)
		}
	}
	// More live entries than the floor, so that the factor decides.
	for i := range minCompactLines {
		if err := l.change(entry{op: '+', kind: lineLoadBalancer, id: fmt.Sprintf("LIVE-%d", i), proofs: proof}); err != nil {
			t.Fatal(err)
		}
		check("growing")
	}
	for i := range 4 * minCompactLines {
		id := fmt.Sprintf("CHURN-%d", i)
		if err := l.change(entry{op: '+', kind: lineLoadBalancer, id: id, proofs: proof}); err != nil {
			t.Fatal(err)
		}
		if err := l.Forget(id); err != nil {
			t.Fatal(err)
		}
		check("churning")
	}
	l.Close()
	l, err = OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(l.IDs()); got != minCompactLines {
		t.Errorf("%d entries after reopening, want %d", got, minCompactLines)
	}
}
