//go:build !windows

package conformance

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/agent/engine/enginetest"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/test/conformance/upstream"
)

var (
	benchSizes = flag.String("conformance.bench-sizes", "2000,10000",
		"BenchmarkUpstream: the numbers of services, comma-separated")
	benchRuns = flag.Int("conformance.bench-runs", 3,
		"BenchmarkUpstream: runs of each workload on each side (the table gives CPU min–max)")
)

// benchScenarios are the steps of a benchmark cluster, in order.
var benchScenarios = []string{
	"first sync",
	"no-op sync",
	"one remote endpoint moved",
	"restart, nothing changed",
	"restart after a Service was deleted while down",
}

// benchNetwork is a network of the workload: enginetest.Winkernel's.
type benchNetwork struct {
	name         string
	overlay, dsr bool
}

var benchNetworks = []benchNetwork{{"overlay", true, false}, {"L2Bridge + DSR", false, true}}

// BenchmarkUpstream runs upstream winkernel (the suite's Linux build, on its
// own fake HNS) and winproxy (engine, applier, simulated HNS) side by side on
// the workload docs/performance.md compares them on (enginetest.Winkernel:
// N ClusterIP services with 5 endpoints each, half of them local, on a
// Windows Server 2022 host), through benchScenarios, and prints per
// scenario both sides' HNS calls, HCN calls as hnslib or hcsshim issue them,
// process CPU time, time inside the fake HNS and allocations as one table.
// Each side runs in its own process: upstream in the driver, winproxy in
// this one. make bench-upstream runs it:
//
//	go test -run '^$' -bench BenchmarkUpstream -benchtime 1x ./test/conformance
func BenchmarkUpstream(b *testing.B) {
	ctx := context.Background()
	bin, err := upstream.Driver(ctx, repoRoot, func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	})
	if err != nil {
		b.Fatal(err)
	}
	sizes, err := parseSizes(*benchSizes)
	if err != nil {
		b.Fatal(err)
	}
	d, err := startUpstream(bin)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := d.Close(); err != nil {
			b.Error(err)
		}
	}()
	var rows []benchRow
	for range b.N {
		rows = rows[:0]
		for _, nw := range benchNetworks {
			for _, n := range sizes {
				c := benchCluster(n, nw)
				start := time.Now()
				up, win := benchRuns2(b, ctx, d, c)
				// A run at 10k takes minutes on a loaded machine: say where it is.
				fmt.Fprintf(os.Stderr, "%s: %d runs on each side in %v\n", c.Name, *benchRuns, time.Since(start).Round(time.Second))
				for i, s := range benchScenarios {
					rows = append(rows, benchRow{network: nw.name, n: n, scenario: s, up: column(up, i), win: column(win, i)})
				}
			}
		}
	}
	printBenchTable(os.Stdout, rows, *benchRuns)
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			return nil, fmt.Errorf("-conformance.bench-sizes: bad size %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// benchRuns2 runs c *benchRuns times on each side, alternating, and
// returns each side's step costs by run. It fails b if a side's sync fails
// or the two sides end a step with different numbers of load balancers.
func benchRuns2(b *testing.B, ctx context.Context, d *upstreamDriver, c *Cluster) (up, win [][]Cost) {
	b.Helper()
	for range *benchRuns {
		runtime.GC()
		u, err := d.Run(c)
		if err != nil {
			b.Fatal(err)
		}
		w, err := runWinproxy(ctx, c)
		if err != nil {
			b.Fatalf("%s: winproxy: %v", c.Name, err)
		}
		if len(u.Steps) != len(c.Steps) || len(w.Steps) != len(c.Steps) {
			b.Fatalf("%s: %d upstream and %d winproxy results for %d steps", c.Name, len(u.Steps), len(w.Steps), len(c.Steps))
		}
		var uc, wc []Cost
		for i := range c.Steps {
			if u.Steps[i].Error != "" {
				b.Fatalf("%s: upstream, %s: %s", c.Name, benchScenarios[i], u.Steps[i].Error)
			}
			if nu, nw := len(u.Steps[i].LoadBalancers), len(w.Steps[i].LoadBalancers); nu != nw {
				b.Fatalf("%s, %s: upstream holds %d load balancers, winproxy %d", c.Name, benchScenarios[i], nu, nw)
			}
			uc, wc = append(uc, u.Steps[i].Cost), append(wc, w.Steps[i].Cost)
		}
		up, win = append(up, uc), append(win, wc)
	}
	return up, win
}

// column is step i's cost in every run.
func column(runs [][]Cost, i int) []Cost {
	out := make([]Cost, len(runs))
	for r := range runs {
		out[r] = runs[r][i]
	}
	return out
}

// benchCluster is enginetest.Winkernel(n) on network nw, as a Cluster of
// benchScenarios' steps, on Windows Server 2022's HNS (no load-balancer
// modify).
func benchCluster(n int, nw benchNetwork) *Cluster {
	cl := enginetest.Winkernel(n, nw.overlay, nw.dsr)
	v := hns.WindowsServer2022.HNS
	caps := hns.CapabilitiesFor(v)
	c := &Cluster{
		Name:       fmt.Sprintf("bench-%s-%d", strings.ReplaceAll(nw.name, " ", ""), n),
		NodeName:   cl.NodeName,
		NodeIPs:    map[string]string{v4: cl.Config.NodeIPs[0]},
		Families:   []string{v4},
		HNSVersion: v.String(),
		Features: Features{DSR: caps.DSR, SessionAffinity: caps.SessionAffinity,
			IPv6DualStack: caps.IPv6DualStack, Modify: caps.ModifyLoadBalancer},
		HostMAC:     enginetest.HostMAC,
		EnableDSR:   cl.Config.EnableDSR,
		HealthzPort: v1alpha1.DefaultHealthCheckPort,
		Network:     Network{ID: "NETWORK-1", Name: cl.Network.Name, Type: string(cl.Network.Type)},
		Measure:     true,
	}
	for _, r := range cl.Network.RemoteSubnetRoutes {
		c.Network.Routes = append(c.Network.Routes, Route{Prefix: r.DestinationPrefix.String(), ProviderAddress: r.ProviderAddress.String(), IsolationID: r.IsolationID})
	}
	if cl.Config.SourceVIP != nil {
		c.SourceVIP = cl.Config.SourceVIP.Address
	}
	for _, ip := range cl.LocalPods {
		c.Endpoints = append(c.Endpoints, LocalEndpoint{Name: "pod-" + ip.String(), IPs: []string{ip.String()}})
	}
	c.Steps = benchSteps(cl)
	return c
}

// benchSteps are benchScenarios' steps on cl: service 1 (2 local and 3
// remote backends) has a remote backend moved to another node, and is the
// one deleted while the proxy is down.
func benchSteps(cl *enginetest.Cluster) []Step {
	first := Step{Services: slices.Clone(cl.Services), Slices: slices.Clone(cl.EndpointSlices)}
	const svc = 1
	orig := cl.EndpointSlices[svc]
	remote := slices.IndexFunc(orig.Endpoints, func(e discoveryv1.Endpoint) bool { return *e.NodeName != cl.NodeName })
	movedTo := 1
	if *orig.Endpoints[remote].NodeName == enginetest.NodeName(1) {
		movedTo = 2
	}
	moved := enginetest.WithEndpoint(orig, remote, cl.FreePodIP(movedTo), enginetest.NodeName(movedTo))
	key := func(s *corev1.Service) string { return s.Namespace + "/" + s.Name }
	return []Step{
		first,
		{},
		{Slices: []*discoveryv1.EndpointSlice{moved}},
		{Restart: true},
		{Restart: true, DeleteServices: []string{key(cl.Services[svc])}, DeleteSlices: []string{moved.Namespace + "/" + moved.Name}},
	}
}

type benchRow struct {
	network  string
	n        int
	scenario string
	up, win  []Cost
}

// printBenchTable writes rows as a Markdown table: calls from the first run
// (a range if runs differ), CPU and fake-HNS time as min–max over the runs,
// allocations and bytes as the runs' minimum.
func printBenchTable(w io.Writer, rows []benchRow, runs int) {
	fmt.Fprintf(w, "\nupstream winkernel (u) and winproxy (w), Windows Server 2022 HNS, %d runs each; CPU: process CPU time, min–max; fake: wall time inside the fake HNS, min–max\n\n", runs)
	fmt.Fprintln(w, "| network | N | scenario | HNS calls (reads + writes): u | w | HCN calls: u | w | CPU ms: u | w | fake ms: u | w | allocs: u | w | MB allocated: u | w |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.network, thousands(int64(r.n)), r.scenario,
			calls(r.up), calls(r.win),
			span(r.up, func(c Cost) int64 { return int64(c.HCN) }, 1), span(r.win, func(c Cost) int64 { return int64(c.HCN) }, 1),
			span(r.up, func(c Cost) int64 { return c.CPUNanos }, 1e6), span(r.win, func(c Cost) int64 { return c.CPUNanos }, 1e6),
			span(r.up, func(c Cost) int64 { return c.FakeNanos }, 1e6), span(r.win, func(c Cost) int64 { return c.FakeNanos }, 1e6),
			least(r.up, func(c Cost) int64 { return int64(c.Allocs) }, 1), least(r.win, func(c Cost) int64 { return int64(c.Allocs) }, 1),
			least(r.up, func(c Cost) int64 { return int64(c.Bytes) }, 1<<20), least(r.win, func(c Cost) int64 { return int64(c.Bytes) }, 1<<20))
	}
}

// calls is "reads + writes", a range where runs differ.
func calls(cs []Cost) string {
	return span(cs, func(c Cost) int64 { return int64(c.HNSReads) }, 1) + " + " + span(cs, func(c Cost) int64 { return int64(c.HNSWrites) }, 1)
}

// span is f over cs divided by unit, "min–max" or one value if they agree.
func span(cs []Cost, f func(Cost) int64, unit int64) string {
	lo, hi := f(cs[0]), f(cs[0])
	for _, c := range cs[1:] {
		lo, hi = min(lo, f(c)), max(hi, f(c))
	}
	if lo/unit == hi/unit {
		return thousands(lo / unit)
	}
	return thousands(lo/unit) + "–" + thousands(hi/unit)
}

// least is the smallest f over cs divided by unit.
func least(cs []Cost, f func(Cost) int64, unit int64) string {
	lo := f(cs[0])
	for _, c := range cs[1:] {
		lo = min(lo, f(c))
	}
	return thousands(lo / unit)
}

// thousands formats n with commas.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
