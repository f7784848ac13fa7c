package apply_test

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/agent/apply"
	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/engine/enginetest"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/agent/ownership"
	"github.com/winproxy/winproxy/agent/syncmode"
	"github.com/winproxy/winproxy/internal/benchmeter"
)

// The benchmarks time one sync as the agent runs it (agent/daemon): Observe,
// the incremental engine (SetNode, Desired), Apply. The informers' part — filling
// the engine — and the CNI's — pod endpoints — happen with the timer
// stopped. A restarted process starts with an empty engine, so the first
// sync and the restarts include the engine's full computation. Each op's
// HNS calls are reported as hns-reads/op and hns-writes/op.

// BenchmarkSync10kServices is issue #3's workload (enginetest.Large) on a
// WS2022 overlay host.
func BenchmarkSync10kServices(b *testing.B) {
	scenarios(b, enginetest.Large(), sim.WS2022)
}

// BenchmarkSyncWinkernel is the workload upstream winkernel was measured on
// (enginetest.Winkernel), to compare call for call with upstream winkernel
// (docs/performance.md#side-by-side-with-upstream-winkernel): overlay
// (WS2022, no LB modify), overlay with modify (WS2025) and L2Bridge with DSR
// (WS2022).
func BenchmarkSyncWinkernel(b *testing.B) {
	for _, n := range []int{100, 1000, 2000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			b.Run("overlay", func(b *testing.B) { scenarios(b, enginetest.Winkernel(n, true, false), sim.WS2022) })
			b.Run("overlay-modify", func(b *testing.B) { scenarios(b, enginetest.Winkernel(n, true, false), sim.WS2025) })
			b.Run("l2bridge-dsr", func(b *testing.B) { scenarios(b, enginetest.Winkernel(n, false, true), sim.WS2022) })
		})
	}
}

// node is one simulated Windows node: its HNS, the agent's ledger file,
// incremental engine and Applier.
type node struct {
	b          testing.TB
	cl         *enginetest.Cluster
	sim        *sim.Sim
	ledgerPath string
	ledger     *ownership.Ledger
	cache      *engine.Incremental
	app        *apply.Applier
	// reads and writes sum the HNS calls of the timed syncs, cpu their
	// process CPU time.
	reads, writes int
	// hcn is what the calls would cost through hcsshim on Windows.
	hcn int
	cpu time.Duration
	// recall makes syncs program only what the engine changed, from the
	// applier's model of HNS (Applier.LocalView, ApplyChanges), as the
	// agent's syncs that a change triggered do.
	recall bool
}

// startTimer and stopTimer time a benchmark; a test has no timer.
func (n *node) startTimer() {
	if b, ok := n.b.(*testing.B); ok {
		b.StartTimer()
	}
}

func (n *node) stopTimer() {
	if b, ok := n.b.(*testing.B); ok {
		b.StopTimer()
	}
}

// newNode starts an agent on a fresh host; nothing is synced yet.
func newNode(b testing.TB, cl *enginetest.Cluster, p sim.Profile) *node {
	b.Helper()
	s, err := cl.Host(p)
	if err != nil {
		b.Fatal(err)
	}
	n := &node{b: b, cl: cl, sim: s, ledgerPath: filepath.Join(b.TempDir(), "ledger")}
	n.start()
	return n
}

// start is a new agent process: the ledger reopened, a new Applier and a
// new incremental engine, filled by the informers (not timed).
func (n *node) start() {
	n.b.Helper()
	if n.ledger != nil {
		n.closeLedger()
	}
	n.cache = n.cl.Incremental()
	n.startTimer()
	l, err := ownership.OpenLedger(n.ledgerPath)
	if err != nil {
		n.b.Fatal(err)
	}
	n.ledger, n.app = l, apply.New(n.sim, l)
	n.stopTimer()
}

// closeLedger ends the process's hold on its ledger file.
func (n *node) closeLedger() {
	if err := n.ledger.Close(); err != nil {
		n.b.Fatal(err)
	}
}

func (n *node) compute(v engine.HNSView) *engine.Desired {
	n.cache.SetNode(n.cl.NodeName, n.cl.Config, n.cl.Nodes[0], v)
	return n.cache.Desired()
}

// sync runs one sync and returns its HNS calls; it fails the benchmark on
// any failure, since a failed call is not a cheap one.
func (n *node) sync() sim.Counts {
	n.b.Helper()
	n.sim.Reset()
	var r apply.Result
	var err error
	if n.recall {
		// As the agent syncs after a change, HNS checked this period (apply.Sync).
		now := time.Now()
		s := &apply.Sync{Applier: n.app, Network: n.cl.Network.Name, HostMAC: enginetest.HostMAC, LastChecked: now, LastListed: now,
			Compute: func(v engine.HNSView) (*engine.Desired, engine.Changes) { return n.compute(v), n.cache.Changes() }}
		out := s.Run(context.Background(), now, time.Minute)
		if out.Decision.Step != syncmode.Changes {
			n.b.Fatalf("the change was not programmed from the engine's changes alone (%v): %+v", out.Decision, n.cache.Changes())
		}
		r, err = out.Result, out.Err
	} else {
		r, err = apply.FullSync(context.Background(), n.app, n.cl.Network.Name, enginetest.HostMAC, n.compute)
	}
	if err != nil || r.Skipped != "" || len(r.Failures) > 0 {
		n.b.Fatalf("sync: %v, skipped %q, failures %v", err, r.Skipped, r.Failures)
	}
	return n.sim.Counts()
}

// timedSync is sync with the timer running; the caller stops it around
// its own preparation.
func (n *node) timedSync() sim.Counts {
	n.startTimer()
	before := benchmeter.Process()
	c := n.sync()
	n.cpu += benchmeter.Process() - before
	n.stopTimer()
	n.reads += c.Reads
	n.writes += c.Writes
	n.hcn += c.HCN
	return c
}

// report sets the per-op metrics; zeroWrites marks the scenarios whose goal
// is no HNS write at all.
func (n *node) report(zeroWrites bool) {
	b := n.b.(*testing.B)
	benchmeter.Report(b, n.cpu)
	b.ReportMetric(float64(n.reads)/float64(b.N), "hns-reads/op")
	b.ReportMetric(float64(n.writes)/float64(b.N), "hns-writes/op")
	b.ReportMetric(float64(n.hcn)/float64(b.N), "hcn-calls/op")
	if zeroWrites && n.writes > 0 {
		b.Errorf("goal missed: %d HNS writes in %d ops, want none", n.writes, b.N)
	}
}

// scenarios runs the scenarios of docs/performance.md on one programmed
// node. Each leaves the node as it found it.
func scenarios(b *testing.B, cl *enginetest.Cluster, p sim.Profile) {
	n := newNode(b, cl, p)
	n.sync()
	// The first sync created the source-VIP endpoint, which the engine sees
	// as a change of the node in the next.
	n.sync()

	svc, local, _ := mixedService(cl)
	orig, moved := remoteMove(cl)
	// The local backend's pod is replaced on this node (the CNI deletes its
	// endpoint and creates one for the new pod).
	newPod := cl.FreePodIP(0)
	replaced := enginetest.WithEndpoint(orig, local, newPod, cl.NodeName)
	oldPod := netip.MustParseAddr(orig.Endpoints[local].Addresses[0])

	b.Run("first-sync", func(b *testing.B) {
		b.ReportAllocs()
		b.StopTimer()
		var reads, writes, hcn int
		var cpu time.Duration
		var m *node
		for range b.N {
			m = newNode(b, cl, p)
			c := m.timedSync()
			reads, writes, hcn, cpu = reads+c.Reads, writes+c.Writes, hcn+c.HCN, cpu+m.cpu
			m.closeLedger()
		}
		m.reads, m.writes, m.hcn, m.cpu = reads, writes, hcn, cpu
		m.report(false)
	})
	unchanged := n.unchanged
	toggle := n.toggle
	b.Run("unchanged", unchanged)
	b.Run("remote-endpoint-moved", func(b *testing.B) {
		toggle(b, func() { n.cache.SetEndpointSlice(moved) }, func() { n.cache.SetEndpointSlice(orig) })
	})
	event := n.event
	b.Run("event-unchanged", event(unchanged))
	// Drift detection between full lists: HNS's IDs against the model.
	b.Run("id-check", func(b *testing.B) {
		n.b, n.reads, n.writes, n.hcn, n.cpu = b, 0, 0, 0, 0
		b.ReportAllocs()
		b.StopTimer()
		for range b.N {
			n.sim.Reset()
			n.startTimer()
			before := benchmeter.Process()
			same, err := n.app.Verify(context.Background())
			n.cpu += benchmeter.Process() - before
			n.stopTimer()
			if err != nil || !same {
				b.Fatalf("Verify() = %v, %v; want true", same, err)
			}
			c := n.sim.Counts()
			n.reads, n.hcn = n.reads+c.Reads, n.hcn+c.HCN
		}
		n.report(true)
	})
	b.Run("event-remote-endpoint-moved", event(func(b *testing.B) {
		toggle(b, func() { n.cache.SetEndpointSlice(moved) }, func() { n.cache.SetEndpointSlice(orig) })
	}))
	b.Run("local-endpoint-replaced", func(b *testing.B) {
		swap := func(from, to netip.Addr, s *discoveryv1.EndpointSlice) func() {
			return func() {
				n.replacePod(from, to)
				n.cache.SetEndpointSlice(s)
			}
		}
		toggle(b, swap(oldPod, newPod, replaced), swap(newPod, oldPod, orig))
	})
	b.Run("restart", func(b *testing.B) {
		n.b, n.reads, n.writes, n.hcn, n.cpu = b, 0, 0, 0, 0
		b.ReportAllocs()
		b.StopTimer()
		var kept int64
		for range b.N {
			n.start()
			before := benchmeter.LiveHeap()
			n.timedSync()
			// What the process keeps between syncs besides its informers'
			// objects: the engine's results and the applier's model of HNS
			// (the sim holds HNS's own state, which a restart does not change).
			kept = benchmeter.LiveHeap() - before
		}
		n.report(true)
		b.ReportMetric(float64(kept), "kept-B")
	})
	b.Run("restart-service-deleted", func(b *testing.B) {
		n.b, n.reads, n.writes, n.hcn, n.cpu = b, 0, 0, 0, 0
		b.ReportAllocs()
		b.StopTimer()
		for range b.N {
			// The service is deleted while the agent is down.
			n.start()
			n.cache.DeleteService(cl.Services[svc].Namespace, cl.Services[svc].Name)
			n.cache.DeleteEndpointSlice(orig.Namespace, orig.Name)
			n.timedSync()
			// It comes back, for the next op.
			n.cache.SetService(cl.Services[svc])
			n.cache.SetEndpointSlice(orig)
			n.sync()
		}
		n.report(false)
	})
}

// unchanged times syncs with nothing changed.
func (n *node) unchanged(b *testing.B) {
	n.b, n.reads, n.writes, n.hcn, n.cpu = b, 0, 0, 0, 0
	b.ReportAllocs()
	b.StopTimer()
	for range b.N {
		n.timedSync()
	}
	n.report(true)
}

// toggle times syncs of one change each: even ops apply it, odd ops revert
// it.
func (n *node) toggle(b *testing.B, change, revert func()) {
	n.b, n.reads, n.writes, n.hcn, n.cpu = b, 0, 0, 0, 0
	b.ReportAllocs()
	b.StopTimer()
	for i := range b.N {
		if i%2 == 0 {
			change()
		} else {
			revert()
		}
		n.timedSync()
	}
	if b.N%2 == 1 {
		revert()
		n.sync()
	}
	n.report(false)
}

// event makes run's syncs those the agent runs after a change: from what
// the applier recalls (agent/daemon), no list.
func (n *node) event(run func(b *testing.B)) func(b *testing.B) {
	return func(b *testing.B) {
		n.recall = true
		defer func() { n.recall = false }()
		run(b)
	}
}

// BenchmarkEventSync is the event-triggered sync at two cluster sizes and
// two fleet sizes, on a node running 250 pods (enginetest.Spread): its cost
// must follow the change, not the cluster's services, endpoints or nodes.
func BenchmarkEventSync(b *testing.B) {
	for _, services := range []int{2000, 10000} {
		for _, nodes := range []int{100, 5000} {
			b.Run(fmt.Sprintf("services=%d/nodes=%d", services, nodes), func(b *testing.B) {
				cl := enginetest.Spread(services, nodes, 250)
				n := newNode(b, cl, sim.WS2022)
				n.sync()
				n.sync()
				orig, moved := remoteMove(cl)
				b.Run("event-unchanged", n.event(n.unchanged))
				b.Run("event-remote-endpoint-moved", n.event(func(b *testing.B) {
					n.toggle(b, func() { n.cache.SetEndpointSlice(moved) }, func() { n.cache.SetEndpointSlice(orig) })
					// What TestEventSyncListsNothing checks at smaller sizes: no read, and
					// the move's four writes (WS2022: endpoint, load balancer deleted and
					// created, old endpoint).
					if n.reads != 0 || n.writes != 4*b.N {
						b.Errorf("%d reads and %d writes in %d moves, want none and 4 each", n.reads, n.writes, b.N)
					}
				}))
			})
		}
	}
}

// remoteMove returns the slice of mixedService and the same slice after
// its remote backend's pod was rescheduled to another remote node (new IP).
func remoteMove(cl *enginetest.Cluster) (orig, moved *discoveryv1.EndpointSlice) {
	svc, _, remote := mixedService(cl)
	orig = cl.EndpointSlices[svc]
	movedTo := 1
	if *orig.Endpoints[remote].NodeName == enginetest.NodeName(1) {
		movedTo = 2
	}
	return orig, enginetest.WithEndpoint(orig, remote, cl.FreePodIP(movedTo), enginetest.NodeName(movedTo))
}

// mixedService returns the first service from 1 on with both local and
// remote backends, with the index of its last local and last remote one
// (Winkernel: service 1, 2 local and 3 remote backends; Large: service 5, 1
// and 9).
func mixedService(cl *enginetest.Cluster) (svc, local, remote int) {
	for svc = 1; ; svc++ {
		local, remote = -1, -1
		for i, e := range cl.EndpointSlices[svc].Endpoints {
			if *e.NodeName == cl.NodeName {
				local = i
			} else {
				remote = i
			}
		}
		if local >= 0 && remote >= 0 {
			return svc, local, remote
		}
	}
}

// replacePod deletes the CNI endpoint of from and creates one for to, as
// when a local pod is replaced.
func (n *node) replacePod(from, to netip.Addr) {
	n.b.Helper()
	st, err := n.sim.Snapshot()
	if err != nil {
		n.b.Fatal(err)
	}
	for _, ep := range st.Endpoints {
		if !ep.Remote && ep.HasIP(from) {
			if err := n.sim.RemoveEndpoint(ep.ID); err != nil {
				n.b.Fatal(err)
			}
		}
	}
	if _, err := n.sim.AddLocalEndpoint(n.cl.Network.Name, "pod-"+to.String(), to); err != nil {
		n.b.Fatal(err)
	}
}

// TestEventSyncListsNothing: at 200 and 2k services, a sync that one
// remote endpoint's move triggered is programmed from the engine's changes
// alone (ApplyChanges), reads nothing and writes only the objects the move
// touches (WS2022: the new endpoint, its load balancer
// deleted and created again, the old endpoint), and leaves HNS as a full
// sync wants it. The same calls at both sizes say that the cost follows the
// change, not the cluster; BenchmarkEventSync checks them at 10k services,
// where building and programming the cluster alone takes most of a minute
// under the race detector.
func TestEventSyncListsNothing(t *testing.T) {
	for _, services := range []int{200, 2000} {
		t.Run(fmt.Sprint(services), func(t *testing.T) {
			cl := enginetest.Winkernel(services, true, false)
			n := newNode(t, cl, sim.WS2022)
			n.sync()
			// The first sync created the source-VIP endpoint, which the
			// engine sees as a change of the node in the next.
			n.sync()
			orig, moved := remoteMove(cl)
			n.recall = true
			for _, s := range []*discoveryv1.EndpointSlice{moved, orig} {
				n.cache.SetEndpointSlice(s)
				c := n.sync()
				if lists := c.Calls[sim.OpListEndpoints] + c.Calls[sim.OpListLoadBalancers]; lists != 0 || c.Reads != 0 {
					t.Errorf("%d lists, %d reads (%v); want none", lists, c.Reads, c.Calls)
				}
				want := map[sim.Op]int{sim.OpCreateEndpoint: 1, sim.OpDeleteLoadBalancer: 1, sim.OpCreateLoadBalancer: 1, sim.OpDeleteEndpoint: 1}
				got := map[sim.Op]int{}
				for op, k := range c.Calls {
					if op.IsWrite() {
						got[op] = k
					}
				}
				if !maps.Equal(want, got) {
					t.Errorf("writes %v, want %v", got, want)
				}
			}
			n.recall = false
			if c := n.sync(); c.Writes != 0 {
				t.Errorf("the full sync after the moves wrote %d times", c.Writes)
			}
		})
	}
}
