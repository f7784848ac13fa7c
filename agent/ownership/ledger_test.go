package ownership

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/winproxy/winproxy/agent/hns"
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

// ReadLedger proves what the journal proves and leaves the file as it is, however much a
// compaction would shorten it: an agent may be appending to it.
func TestReadLedgerChangesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "owned")
	lb := hns.LoadBalancer{ID: "LB-1", PortMapping: hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 80, ExternalPort: 80}}
	journal := fmt.Sprintf("+L LB-1 %s\n+L LB-2 %s\n-L LB-2\n", fingerprint(lb), fingerprint(lb))
	if err := os.WriteFile(path, []byte(journal), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := ReadLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if !NewOwned(nil, l).OwnsLoadBalancer(lb) || l.Has("LB-2") {
		t.Errorf("read ledger: owns LB-1 %v, has LB-2 %v; want true, false", NewOwned(nil, l).OwnsLoadBalancer(lb), l.Has("LB-2"))
	}
	if err := l.Forget("LB-1"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != journal {
		t.Errorf("the journal changed:\n%s", b)
	}
	if l, err := ReadLedger(filepath.Join(t.TempDir(), "missing")); err != nil || len(l.IDs()) != 0 {
		t.Errorf("a missing ledger reads as %v, %v; want empty", l, err)
	}
}

// BenchmarkLedgerSnapshot is the cost of a compaction's text at 10k Services: 20,000 load
// balancers of one fingerprint each. A journal is compacted after as many changes as it holds
// entries, so an event's share is this over 20,000.
func BenchmarkLedgerSnapshot(b *testing.B) {
	l, err := OpenLedger("")
	if err != nil {
		b.Fatal(err)
	}
	for i := range 20000 {
		id := fmt.Sprintf("%08X-0000-4000-8000-000000000000", i)
		if err := l.change(entry{op: '+', kind: lineLoadBalancer, id: id, proofs: []string{strings.Repeat("F", fingerprintLen)}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = l.snapshot()
	}
}

// TestSnapshotIsSizedExactly: a compaction's text is made in one allocation of its exact size,
// whatever its entries hold (no fingerprint, several, intents).
func TestSnapshotIsSizedExactly(t *testing.T) {
	l, err := OpenLedger("")
	if err != nil {
		t.Fatal(err)
	}
	fp := strings.Repeat("A", fingerprintLen)
	for _, e := range []entry{
		{op: '+', kind: lineLoadBalancer, id: "LB-OLD"},
		{op: '+', kind: lineLoadBalancer, id: "LB-ONE", proofs: []string{fp}},
		{op: '+', kind: lineLoadBalancer, id: "LB-TWO", proofs: []string{fp, strings.Repeat("B", fingerprintLen)}},
		{op: '+', kind: lineIntent, id: strings.Repeat("C", fingerprintLen)},
	} {
		if err := l.change(e); err != nil {
			t.Fatal(err)
		}
	}
	if b := l.snapshot(); len(b) != cap(b) {
		t.Fatalf("a snapshot of %d bytes in room for %d:\n%s", len(b), cap(b), b)
	}
}
