//go:build !windows

package conformance

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/winproxy/winproxy/test/conformance/upstream"
)

var (
	clusters = flag.Int("conformance.clusters", 500,
		"number of random clusters (seeds 1..n) to compare; make conformance runs 3000")
	onlySeed = flag.Uint64("conformance.seed", 0,
		"compare only this seed's cluster, logging it and every difference with its explanation (use -v)")
	upstreamTests = flag.Bool("conformance.upstream-tests", false,
		"also run upstream's own winkernel unit tests in the Linux build, to show the build is faithful")
)

// maxReported bounds the failing clusters described in full.
const maxReported = 3

// TestConformance runs random clusters on upstream winkernel and on
// winproxy (engine, applier, simulated HNS) and fails on any difference the
// allow-list does not explain. The first run builds upstream (minutes);
// later runs reuse the cached build.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("compares against upstream winkernel; skipped in -short mode")
	}
	ctx := context.Background()
	bin, err := upstream.Driver(ctx, repoRoot, func(format string, args ...any) {
		// Also on stderr: a cold build takes minutes, say why.
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		t.Logf(format, args...)
	})
	if err != nil {
		t.Fatal(err)
	}
	seeds := make(chan uint64)
	go func() {
		defer close(seeds)
		if *onlySeed != 0 {
			seeds <- *onlySeed
			return
		}
		for s := uint64(1); s <= uint64(*clusters); s++ {
			seeds <- s
		}
	}()
	var verbose func(string)
	if *onlySeed != 0 {
		verbose = func(s string) { t.Log(s) }
	}
	start := time.Now()
	reports := make(chan clusterReport)
	var wg sync.WaitGroup
	// Each worker has its own upstream process: the fake HNS is global.
	for range max(1, min(runtime.GOMAXPROCS(0), 4)) {
		d, err := startUpstream(bin)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer func() {
				if err := d.Close(); err != nil {
					t.Error(err)
				}
			}()
			for s := range seeds {
				reports <- check(ctx, d, s, verbose)
			}
		})
	}
	go func() { wg.Wait(); close(reports) }()

	var all []clusterReport
	for r := range reports {
		all = append(all, r)
	}
	slices.SortFunc(all, func(a, b clusterReport) int { return int(a.seed) - int(b.seed) })
	total := map[string]int{}
	inClusters := map[string]int{}
	var steps, lbs, failed int
	for _, r := range all {
		if r.err != nil {
			t.Fatal(r.err)
		}
		steps += r.steps
		lbs += r.lbs
		for id, n := range r.counts {
			total[id] += n
			inClusters[id]++
		}
		if r.failure != "" {
			failed++
			if failed <= maxReported {
				t.Error(r.failure)
			}
		}
	}
	if failed > maxReported {
		t.Errorf("... and %d more clusters with unexplained differences", failed-maxReported)
	}
	t.Logf("compared %d clusters, %d syncs (%d of them programmed from the engine's changes alone), %d load balancers in %s against upstream winkernel",
		len(all), steps, syncsFromChanges.Load(), lbs, time.Since(start).Round(time.Second))
	var b strings.Builder
	b.WriteString("differences by entry of the allow-list (items, clusters):")
	for _, d := range allowList {
		fmt.Fprintf(&b, "\n  %6d %5d  %s", total[d.ID], inClusters[d.ID], d.ID)
	}
	t.Log(b.String())
	if *onlySeed == 0 && len(all) >= 1000 {
		// A large run that never meets an entry means the generator no
		// longer makes the case: the entry is unconfirmed.
		for _, id := range slices.Sorted(maps.Keys(allowListIDs())) {
			if total[id] == 0 {
				t.Errorf("no cluster showed difference %q: the generator no longer covers it", id)
			}
		}
	}
}

func allowListIDs() map[string]bool {
	out := map[string]bool{}
	for _, d := range allowList {
		out[d.ID] = true
	}
	return out
}

// TestUpstreamOwnTests runs upstream's winkernel unit tests in the same
// Linux build the suite uses (make conformance does).
func TestUpstreamOwnTests(t *testing.T) {
	if !*upstreamTests {
		t.Skip("run with -conformance.upstream-tests (make conformance)")
	}
	out, err := upstream.UpstreamTests(context.Background(), repoRoot)
	if err != nil {
		t.Fatalf("upstream's winkernel tests fail in the Linux build: %v\n%s", err, out)
	}
	top := func(prefix string) int { return strings.Count("\n"+out, "\n"+prefix) }
	t.Logf("upstream's winkernel tests in the Linux build: %d passed (%d with subtests), %d skipped by upstream itself",
		top("--- PASS"), strings.Count(out, "--- PASS"), top("--- SKIP"))
}
