//go:build linux

package daemon_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/winproxy/winproxy/agent/engine/enginetest"
	"github.com/winproxy/winproxy/agent/hns/hnsrpc"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/fleet"
	"github.com/winproxy/winproxy/internal/testenv"
)

// BenchmarkAgent measures the agent where it runs: the winproxy-agent binary (`run`) against a
// real kube-apiserver holding WINPROXY_BENCH_SERVICES
// Services (10,000) with 10 endpoints each on WINPROXY_BENCH_NODES Nodes (1,000), the node under
// test running 250 of the pods (enginetest.Spread). It reports the first sync (wall, and CPU from
// the start of the process), then the agent's CPU per EndpointSlice event over
// WINPROXY_BENCH_EVENTS events (2,400: an hour of one change every 1.5 s), each moving a remote
// endpoint to another node, one every WINPROXY_BENCH_PACE (25ms: the hour's events in a minute),
// less what the agent costs idle over the same time, and of it the share of the Go runtime's
// monitor thread (monitorOf), which CPU profiles do not see; the garbage collections the churn and
// an idle period cause; and the agent's RSS and live heap after the first sync and after the churn,
// with the peak RSS so far. CPU is the process's, read from /proc: the machine's other work does
// not count. WINPROXY_BENCH_PROFILE names a file for a CPU profile of the agent during the whole
// churn; its heap profiles after the first sync and after the churn, and the churn's allocations,
// are written beside it (.first.heap, .churn.heap, .churn.allocs); with WINPROXY_BENCH_PROFILE_PART
// naming one of the parts below (receive, slice-label, noop-sync) the CPU profile covers that part
// instead of the churn; WINPROXY_BENCH_PARTS sets the updates of each part. WINPROXY_BENCH_AGENT_ENV adds
// variables to the agent's environment (e.g. GOGC=50), as a pod's env would, and
// WINPROXY_BENCH_AGENT_ARGS to its flags (e.g. --kube-api-qps=20). The agent reaches the API
// server through a loopback forwarder that counts the bytes it receives (apiserver-MiB-first, and
// apiserver-KiB/event over the churn, TLS included), and the API server's own CPU over the churn is
// reported per event (apiserver-cpu-ms/event: the benchmark's updates, their storage and the watch).
// WINPROXY_BENCH_WINDOWS names the simulated host's Windows Server release (ws2022 by default; see
// sim.ProfileByName): an event's load balancer is deleted and created again up to 2022, modified in
// place from 2025 on, whose HNS modifies (docs/design/dataplane.md, "How winkernel syncs").
// Last, with the agent stopped, it measures the floor of an event (floor_bench_test.go): a bare
// client-go informer that makes the same HNS calls, on the same host, reported as floor-* and
// the agent's event over it (agent-over-floor).
//
// The node's simulated host lives in the benchmark's process, which serves it to the agent on a
// Unix socket (hnsrpc, --hns-sim-socket) as HNS serves the agent's JSON calls on Windows from a
// service of its own. So every figure is the agent's alone, its side of each HNS call included:
// until the host moved out of the agent's process, the agent's RSS, live heap and CPU held the
// simulator's (about 60 MB of heap and 7 % of the CPU at 10k services), and its heap was split
// by a guess from the heap profile's call stacks.
//
// It takes several minutes (most of them loading the apiserver) and runs once whatever -benchtime
// says: go test -run '^$' -bench BenchmarkAgent -benchtime 1x ./agent/daemon
func BenchmarkAgent(b *testing.B) {
	services, nodes := envInt(b, "WINPROXY_BENCH_SERVICES", 10000), envInt(b, "WINPROXY_BENCH_NODES", 1000)
	events := envInt(b, "WINPROXY_BENCH_EVENTS", 2400)
	pace, err := time.ParseDuration(cmp.Or(os.Getenv("WINPROXY_BENCH_PACE"), "25ms"))
	if err != nil {
		b.Fatalf("WINPROXY_BENCH_PACE: %v", err)
	}
	profilePart := os.Getenv("WINPROXY_BENCH_PROFILE_PART")
	if !slices.Contains([]string{"", "receive", "slice-label", "noop-sync"}, profilePart) {
		b.Fatalf("WINPROXY_BENCH_PROFILE_PART=%s: not a part (receive, slice-label, noop-sync)", profilePart)
	}
	ctx := context.Background()
	ctrllog.SetLogger(logr.Discard())
	env, err := testenv.Start(testenv.WithAPIServerFlag("service-cluster-ip-range", "10.96.0.0/12"))
	if err != nil {
		b.Fatal(err)
	}
	defer env.Stop()
	dir := b.TempDir()
	if err := fleet.Build(ctx, env.RepoRoot, dir); err != nil {
		b.Fatal(err)
	}
	cl := enginetest.Spread(services, nodes, 250)
	start := time.Now()
	c := fastClient(b, env)
	slices := load(b, c, cl)
	b.Logf("Loaded %d Nodes, %d Services and %d EndpointSlices in %v", nodes, services, len(slices), time.Since(start).Round(time.Second))
	release, err := sim.ProfileByName(cmp.Or(os.Getenv("WINPROXY_BENCH_WINDOWS"), sim.WS2022.Name))
	if err != nil {
		b.Fatalf("WINPROXY_BENCH_WINDOWS: %v", err)
	}
	b.Logf("Simulated host: Windows Server %s, HNS %d.%d", release.WindowsServer, release.Version.Major, release.Version.Minor)
	simHost := seedHost(b, cl, release)
	host, err := hnsrpc.Serve(filepath.Join(dir, "hns.sock"), simHost)
	if err != nil {
		b.Fatal(err)
	}
	defer host.Close()

	// The agent reaches the API server through a forwarder that counts what it receives.
	apiURL, err := url.Parse(env.Config.Host)
	if err != nil {
		b.Fatal(err)
	}
	w := startWire(b, apiURL.Host)
	defer w.Close()
	apiServer := apiServerPid(b, apiURL)
	// The agent keeps its ledger in the folder of the host file, which is not opened.
	kubeconfig := throughWire(b, env.Kubeconfig, dir, w)
	p, err := fleet.StartAgent(dir, dir, filepath.Join(dir, "host"), fleet.Node{Name: cl.NodeName}, fleet.AgentOptions{
		Kubeconfig: kubeconfig, HealthIP: "127.0.19.1", SimSocket: host.Addr(),
		Args: append([]string{"--profiling"}, strings.Fields(os.Getenv("WINPROXY_BENCH_AGENT_ARGS"))...),
		Env:  strings.Fields(os.Getenv("WINPROXY_BENCH_AGENT_ENV"))})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Stop()
	start = time.Now()
	for !p.Ready() {
		if p.Exited() || time.Since(start) > 15*time.Minute {
			b.Fatalf("the agent did not get ready:\n%s", p.Tail(30))
		}
		time.Sleep(200 * time.Millisecond)
	}
	firstWall, firstCPU := time.Since(start), cpuOf(b, p.Pid())
	b.ReportMetric(firstWall.Seconds(), "first-sync-s")
	b.ReportMetric(firstCPU.Seconds(), "first-sync-cpu-s")
	b.ReportMetric(float64(w.received.Load())/(1<<20), "apiserver-MiB-first")
	settle(b, p)
	memory(b, p, "first")

	// The first sync created the source VIP's endpoint, which the next sync sees as a change of
	// the node and programs in full: that is still the start, not an event's cost.
	for metric(b, p, "winproxy_agent_syncs_total") < 2 {
		if time.Since(start) > 15*time.Minute {
			b.Fatal("the agent did not sync again within a period")
		}
		time.Sleep(time.Second)
	}
	settle(b, p)

	// What the agent costs doing nothing over a sync period: heartbeats, metrics, the Go runtime
	// and the period's ID check, which a sync an event triggers takes over during the churn.
	idleStart, idleCPU0, idleMonitor0, idleSyncs, idleGCs := time.Now(), cpuOf(b, p.Pid()), monitorOf(b, p.Pid()), syncsByMode(b, p), metric(b, p, gcCycles)
	time.Sleep(syncPeriod * time.Second)
	idleRate := float64(cpuOf(b, p.Pid())-idleCPU0) / float64(time.Since(idleStart))
	idleMonitorRate := float64(monitorOf(b, p.Pid())-idleMonitor0) / float64(time.Since(idleStart))
	logSyncs(b, "idle", idleSyncs, syncsByMode(b, p))
	b.ReportMetric(idleRate*1000, "idle-cpu-ms/s")
	b.ReportMetric(metric(b, p, gcCycles)-idleGCs, "idle-gc-cycles/period")

	syncs0 := syncsByMode(b, p)
	writes0, _ := p.HNSWrites()
	var profile sync.WaitGroup
	if path := os.Getenv("WINPROXY_BENCH_PROFILE"); path != "" && profilePart == "" {
		// The whole churn: at 25 ms a pace, 30 s held about 160 samples, too few to tell a
		// function under 5 % from noise.
		seconds := int(math.Ceil((time.Duration(events) * pace).Seconds()))
		profile.Go(func() { profileCPU(b, p, seconds, path) })
		// What the churn allocated, by call stack: the difference of two allocation profiles,
		// sampled at Go's default rate (WINPROXY_BENCH_AGENT_ENV=GODEBUG=memprofilerate=4096 for
		// finer). The profile's own writing falls at its end, under runtime/pprof.
		profile.Go(func() {
			fetch(b, strings.Replace(p.MetricsURL, "/metrics", fmt.Sprintf("/debug/pprof/allocs?seconds=%d", seconds), 1), path+".churn.allocs")
		})
	}
	// From here on the kernel notes which of the binary's pages the agent touches (binaryPages).
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.Pid()), []byte("1"), 0); err != nil {
		b.Fatal(err)
	}
	churnStart, churnCPU0, churnMonitor0, churnGCs, churnAllocs := time.Now(), cpuOf(b, p.Pid()), monitorOf(b, p.Pid()), metric(b, p, gcCycles), metric(b, p, allocated)
	churnAPI0, churnReceived0 := cpuOf(b, apiServer), w.received.Load()
	churn(b, c, cl, slices, 0, events, pace)
	settle(b, p)
	churnWall, churnCPU, churnMonitor := time.Since(churnStart), cpuOf(b, p.Pid())-churnCPU0, monitorOf(b, p.Pid())-churnMonitor0
	// The API server's side: all its CPU over the churn (the benchmark's updates, their storage and
	// every watch), and what the agent received from it.
	b.ReportMetric(float64(cpuOf(b, apiServer)-churnAPI0)/float64(events)/1e6, "apiserver-cpu-ms/event")
	b.ReportMetric(float64(w.received.Load()-churnReceived0)/float64(events)/1024, "apiserver-KiB/event")
	// A collection's cost follows the live heap; how often one comes follows what the agent
	// allocates: per event (the churn) and per period (the ID check's answer). With the
	// collector's target a fixed share of the live heap, the collector's CPU per event follows
	// what an event allocates, whatever the heap's size.
	b.ReportMetric((metric(b, p, gcCycles)-churnGCs)/float64(events)*1000, "gc-cycles/1000-events")
	b.ReportMetric((metric(b, p, allocated)-churnAllocs)/float64(events)/1024, "allocated-KiB/event")
	profile.Wait()
	syncs, lists := logSyncs(b, "churn", syncs0, syncsByMode(b, p))
	if lists > 0 {
		// The churn starts a few periods after the first sync's list, so this takes a start
		// slower than the benchmark allows for.
		b.Fatalf("the churn held %v full lists of HNS, which its figures would count as events' cost", lists)
	}
	writes, _ := p.HNSWrites()
	net := float64(churnCPU) - idleRate*float64(churnWall)
	event := net / float64(events) / 1e6
	b.ReportMetric(event, "cpu-ms/event")
	// Of which the runtime's monitor thread (monitorOf), which a CPU profile leaves out.
	b.ReportMetric((float64(churnMonitor)-idleMonitorRate*float64(churnWall))/float64(events)/1e6, "monitor-cpu-ms/event")
	b.ReportMetric(float64(churnCPU)/float64(events)/1e6, "gross-cpu-ms/event")
	b.ReportMetric(syncs/float64(events), "syncs/event")
	b.ReportMetric((writes-writes0)/float64(events), "hns-writes/event")
	memory(b, p, "churn")

	// Where an event's CPU goes: more series of updates at the churn's pace, each measured as the
	// churn is. A Service update that changes only a label costs the agent the event's reception
	// alone (the watch, the informer, its handler), and no sync; so does such an EndpointSlice
	// update, which the handler drops as kube-proxy does. An update of a remote endpoint's
	// terminating condition while it stays ready is read by the engine and changes nothing it
	// programs: reception and a sync with nothing to program. The churn's event less that one is
	// what programming the change costs (HNS calls and their bookkeeping). Each part is
	// WINPROXY_BENCH_PARTS updates (1,000, or the churn's events if fewer): a part of 1,000 put a
	// sync that programs nothing at 0.07 to 0.37 ms over its reception from run to run, one of
	// 5,000 at 0.07 and 0.09 ms at 2k and 10k Services, for 2 minutes a part.
	parts := envInt(b, "WINPROXY_BENCH_PARTS", min(events, 1000))
	for _, part := range []struct {
		name   string
		update func(i int) error
	}{
		{"receive", label(c, func(i int) client.Object { return cl.Services[i%len(cl.Services)] })},
		{"slice-label", label(c, func(i int) client.Object { return slices[i%len(slices)] })},
		{"noop-sync", func(i int) error {
			s := slices[i%len(slices)]
			for e := range s.Endpoints {
				if *s.Endpoints[e].NodeName != cl.NodeName {
					cond := &s.Endpoints[e].Conditions
					cond.Ready, cond.Terminating = new(true), new(cond.Terminating == nil || !*cond.Terminating)
					break
				}
			}
			return c.Update(ctx, s)
		}},
	} {
		// The agent lists HNS in full every syncmode.FullListEvery periods, which at 10k Services
		// costs a part of 1,000 updates about 0.26 ms an update; a part a list fell in is measured
		// once more, on the next updates (a list comes every few minutes, a part takes seconds).
		for attempt := 0; ; attempt++ {
			syncs0 := syncsByMode(b, p)
			writes0, _ := p.HNSWrites()
			var profile sync.WaitGroup
			if path := os.Getenv("WINPROXY_BENCH_PROFILE"); path != "" && profilePart == part.name {
				seconds := int(math.Ceil((time.Duration(parts) * pace).Seconds()))
				profile.Go(func() { profileCPU(b, p, seconds, path) })
			}
			start, cpu0, monitor0 := time.Now(), cpuOf(b, p.Pid()), monitorOf(b, p.Pid())
			offset := attempt * parts
			paced(b, parts, pace, func(i int) error { return part.update(offset + i) })
			settle(b, p)
			wall := float64(time.Since(start))
			net := float64(cpuOf(b, p.Pid())-cpu0) - idleRate*wall
			monitor := float64(monitorOf(b, p.Pid())-monitor0) - idleMonitorRate*wall
			writes, _ := p.HNSWrites()
			profile.Wait()
			syncs, lists := logSyncs(b, part.name, syncs0, syncsByMode(b, p))
			if lists > 0 && attempt == 0 {
				continue
			}
			b.ReportMetric(net/float64(parts)/1e6, "cpu-ms/"+part.name)
			b.ReportMetric(monitor/float64(parts)/1e6, "monitor-cpu-ms/"+part.name)
			b.ReportMetric(syncs/float64(parts), "syncs/"+part.name)
			b.ReportMetric((writes-writes0)/float64(parts), "hns-writes/"+part.name)
			break
		}
	}

	// The floor of an event (floor_bench_test.go), on the host the agent leaves as it stops.
	p.Stop()
	floor(b, floorConfig{Kubeconfig: kubeconfig, HNS: host.Addr(), Network: cl.Network.Name}, simHost, c, cl, slices, events, parts, pace, event)
}

// profileCPU writes a CPU profile of the agent over the next seconds to path.
func profileCPU(b *testing.B, p *fleet.Process, seconds int, path string) {
	fetch(b, strings.Replace(p.MetricsURL, "/metrics", fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds), 1), path)
}

// label updates the objects objs(i) gives by a label only.
func label(c client.Client, objs func(i int) client.Object) func(i int) error {
	return func(i int) error {
		patch := fmt.Appendf(nil, `{"metadata":{"labels":{"bench.winproxy.io/touched":"%d"}}}`, i)
		return c.Patch(context.Background(), objs(i), client.RawPatch(types.MergePatchType, patch))
	}
}

// paced sends n updates, one every pace.
func paced(b *testing.B, n int, pace time.Duration, update func(i int) error) {
	tick := time.NewTicker(pace)
	defer tick.Stop()
	for i := range n {
		<-tick.C
		if err := update(i); err != nil {
			b.Fatal(err)
		}
	}
}

// gcCycles counts the agent's garbage collections, and allocated the bytes it allocated
// (client_golang's Go collector).
const (
	gcCycles  = "go_gc_duration_seconds_count"
	allocated = "go_memstats_alloc_bytes_total"
)

// syncPeriod is the agent's sync period in seconds, the default.
const syncPeriod = v1alpha1.DefaultSyncPeriodSeconds

// envInt reads a size from the environment.
func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return n
}

// fastClient is a client that loads the apiserver as fast as it takes.
func fastClient(b *testing.B, env *testenv.Env) client.Client {
	cfg := *env.Config
	cfg.QPS, cfg.Burst = 5000, 5000
	c, err := client.New(&cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// load creates the cluster's Nodes (with their status, as kubelets report it), Services (the
// apiserver picks their ClusterIPs), EndpointSlices and the WindowsProxyNode of node-0, and
// returns the EndpointSlices as created.
func load(b *testing.B, c client.Client, cl *enginetest.Cluster) []*discoveryv1.EndpointSlice {
	ctx := context.Background()
	for _, ns := range []string{"bench", fleet.SystemNamespace} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
	}
	parallel(b, len(cl.Nodes), func(i int) error {
		n := asManaged(cl.Nodes[i].DeepCopy(), i)
		status := n.Status
		if err := c.Create(ctx, n); err != nil {
			return err
		}
		n.Status = status
		return c.Status().Update(ctx, n)
	})
	parallel(b, len(cl.Services), func(i int) error {
		svc := cl.Services[i].DeepCopy()
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil
		return c.Create(ctx, svc)
	})
	slices := make([]*discoveryv1.EndpointSlice, len(cl.EndpointSlices))
	parallel(b, len(slices), func(i int) error {
		slices[i] = cl.EndpointSlices[i].DeepCopy()
		return c.Create(ctx, slices[i])
	})
	cfg := cl.Config
	cfg.Sync = v1alpha1.SyncSpec{PeriodSeconds: syncPeriod, MinPeriodSeconds: 0}
	wpn := &v1alpha1.WindowsProxyNode{ObjectMeta: metav1.ObjectMeta{Name: cl.NodeName},
		Spec: v1alpha1.WindowsProxyNodeSpec{ConfigName: "bench", Hash: "bench", Proxy: cfg}}
	if err := c.Create(ctx, wpn); err != nil {
		b.Fatal(err)
	}
	return slices
}

// asManaged gives node i what the kubelet and the cloud provider of a managed cluster give a
// Windows node besides its InternalIP and pod CIDR (labels and addresses as AKS sets them, in
// three zones), which the agent's informer must not keep.
func asManaged(n *corev1.Node, i int) *corev1.Node {
	zone := fmt.Sprintf("westeurope-%d", i%3+1)
	n.Labels = map[string]string{
		corev1.LabelOSStable: "windows", corev1.LabelArchStable: "amd64", corev1.LabelHostname: n.Name,
		"beta.kubernetes.io/os": "windows", "beta.kubernetes.io/arch": "amd64",
		corev1.LabelInstanceTypeStable: "Standard_D4s_v5", "beta.kubernetes.io/instance-type": "Standard_D4s_v5",
		corev1.LabelTopologyRegion: "westeurope", corev1.LabelTopologyZone: zone,
		"failure-domain.beta.kubernetes.io/region": "westeurope", "failure-domain.beta.kubernetes.io/zone": zone,
		corev1.LabelWindowsBuild: "10.0.20348",
		"agentpool":              "win", "kubernetes.azure.com/agentpool": "win", "kubernetes.azure.com/mode": "user",
		"kubernetes.azure.com/os-sku": "Windows2022", "kubernetes.azure.com/role": "agent",
		"kubernetes.azure.com/cluster": "MC_bench_bench_westeurope", "kubernetes.azure.com/node-image-version": "AKSWindows-2022-containerd-20348.2966.241218",
		"topology.disk.csi.azure.com/zone": zone,
	}
	n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: n.Name})
	return n
}

// parallel runs f for 0..n-1 on 16 workers and fails on the first error.
func parallel(b *testing.B, n int, f func(i int) error) {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

// seedHost is node-0's host as the CNI leaves it: the overlay network with a route per other
// node, and node-0's pods' endpoints, on the given Windows Server release.
func seedHost(b *testing.B, cl *enginetest.Cluster, release sim.Profile) *sim.Sim {
	s := sim.MustNew(sim.WithProfile(release))
	if _, err := s.AddNetwork(cl.Network); err != nil {
		b.Fatal(err)
	}
	for _, ip := range cl.LocalPods {
		if _, err := s.AddLocalEndpoint(cl.Network.Name, "pod-"+ip.String(), ip); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// churn sends events EndpointSlice updates, one every pace, the churn's events from, from+1 and
// so on: each moves a remote endpoint of the next slice to a pod address that no other pod uses
// (slice k's on node 1 + k mod the other nodes), and back when the slices come round again. The
// agent's work per event does not depend on the pace as long as each event gets a sync of its own
// (syncs/event near 1).
func churn(b *testing.B, c client.Client, cl *enginetest.Cluster, slices []*discoveryv1.EndpointSlice, from, events int, pace time.Duration) {
	ctx := context.Background()
	tick := time.NewTicker(pace)
	defer tick.Stop()
	// Spread gives each other node about the same number of pods; the moved endpoints take the
	// addresses after them.
	nodes := len(cl.Nodes) - 1
	free := (len(cl.EndpointSlices)*10)/nodes + 1
	if free+len(slices)/nodes >= 1020 {
		b.Fatalf("%d nodes have no room for %d more pods each", nodes, len(slices)/nodes+1)
	}
	for i := from; i < from+events; i++ {
		<-tick.C
		k := i % len(slices)
		s, orig := slices[k], cl.EndpointSlices[k]
		for e := range s.Endpoints {
			if *orig.Endpoints[e].NodeName == cl.NodeName {
				continue
			}
			if i/len(slices)%2 == 1 {
				s.Endpoints[e].NodeName, s.Endpoints[e].Addresses = orig.Endpoints[e].NodeName, orig.Endpoints[e].Addresses
			} else {
				to := 1 + k%nodes
				s.Endpoints[e].NodeName, s.Endpoints[e].Addresses = new(enginetest.NodeName(to)), []string{cl.PodIPOf(to, free+k/nodes).String()}
			}
			break
		}
		if err := c.Update(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
}

// settle waits until the agent's syncs stop: two readings of its sync count a second apart agree.
func settle(b *testing.B, p *fleet.Process) {
	last := -1.0
	for range 60 {
		time.Sleep(time.Second)
		n := metric(b, p, "winproxy_agent_syncs_total")
		if n == last {
			return
		}
		last = n
	}
	b.Fatal("the agent kept syncing a minute after the last event")
}

// memory reports the agent's RSS and its live heap. RSS is read first, as the agent runs: a heap
// profile makes it read its symbol tables, pages of the binary that stay resident (RssFile) and
// that a running agent does not touch. The heap profile's text form then forces a collection
// (gc=1) and ends with the runtime's memory statistics. Both are the agent's alone: the simulated
// host is the benchmark's.
func memory(b *testing.B, p *fleet.Process, when string) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		b.Fatal(err)
	}
	kB := strings.ReplaceAll(string(status), " kB", "")
	b.ReportMetric(statLine(b, kB, "VmRSS:")/1024, "rss-MiB-"+when)
	// The most the agent held so far (its first sync's peak, as a rule): what a memory limit must allow.
	b.ReportMetric(statLine(b, kB, "VmHWM:")/1024, "peak-rss-MiB-"+when)
	if when == "churn" {
		resident, used := binaryPages(b, p.Pid())
		b.ReportMetric(used, "binary-used-MiB-churn")
		b.Logf("churn: the binary's pages: %.0f MiB resident, %.0f MiB of them touched during the churn", resident, used)
	}
	heap := filepath.Join(b.TempDir(), "heap")
	fetch(b, strings.Replace(p.MetricsURL, "/metrics", "/debug/pprof/heap?gc=1&debug=1", 1), heap)
	text, err := os.ReadFile(heap)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(statLine(b, string(text), "# HeapAlloc = ")/(1<<20), "heap-MiB-"+when)
	if path := os.Getenv("WINPROXY_BENCH_PROFILE"); path != "" {
		fetch(b, strings.Replace(p.MetricsURL, "/metrics", "/debug/pprof/heap", 1), path+"."+when+".heap")
	}
	// Where the RSS goes: the binary's pages (RssFile) are not its heap, and of the heap the runtime
	// holds, what it freed but has not yet returned to the system. Stack, MSpan and MCache lines
	// read "in use / held": the held figure is taken.
	memStats := regexp.MustCompile(`(?m)^# (\w+) = (?:\d+ / )?(\d+)$`).FindAllStringSubmatch(string(text), -1)
	mib := func(name string) float64 {
		for _, m := range memStats {
			if m[1] == name {
				n, _ := strconv.ParseFloat(m[2], 64)
				return n / (1 << 20)
			}
		}
		b.Fatalf("no %s in the heap profile's statistics", name)
		return 0
	}
	b.Logf("%s: RSS anonymous %.0f MiB, file %.0f MiB; heap in use %.0f MiB, free and not returned %.0f MiB; stacks %.0f MiB, GC and other runtime %.0f MiB",
		when, statLine(b, kB, "RssAnon:")/1024, statLine(b, kB, "RssFile:")/1024, mib("HeapInuse"), mib("HeapIdle")-mib("HeapReleased"),
		mib("Stack"), mib("GCSys")+mib("OtherSys")+mib("MSpan")+mib("MCache")+mib("BuckHashSys"))
}

// binaryPages is how much of the agent's executable is resident (MiB) and how much of that it
// touched since its referenced bits were cleared (/proc/PID/clear_refs). The resident part is
// more than the agent uses: Linux maps the cached pages around each page a process faults in
// (fault-around, 64 KiB), and the benchmark has just built the binary, so all of it is cached;
// the pages of start-up code stay mapped too. The part touched during the churn is the agent's
// working set of its binary, what stays when the kernel reclaims the rest.
func binaryPages(b *testing.B, pid int) (resident, used float64) {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		b.Fatal(err)
	}
	smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		b.Fatal(err)
	}
	ofBinary := false
	for line := range strings.Lines(string(smaps)) {
		fields := strings.Fields(line)
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			// A mapping's header: address range, permissions, offset, device, inode, path.
			ofBinary = len(fields) == 6 && fields[5] == exe
		case ofBinary && len(fields) == 3 && fields[0] == "Rss:":
			resident += parseKB(b, fields[1])
		case ofBinary && len(fields) == 3 && fields[0] == "Referenced:":
			used += parseKB(b, fields[1])
		}
	}
	if resident == 0 {
		b.Fatalf("no mapping of %s in /proc/%d/smaps", exe, pid)
	}
	return resident, used
}

// parseKB reads a kB figure of /proc as MiB.
func parseKB(b *testing.B, s string) float64 {
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		b.Fatal(err)
	}
	return n / 1024
}

// statLine is the number on the line of text that starts with prefix.
func statLine(b *testing.B, text, prefix string) float64 {
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("no %q in %.200s", prefix, text)
	return 0
}

// syncsByMode counts the agent's syncs by result, mode and reason (winproxy_agent_syncs_total).
func syncsByMode(b *testing.B, p *fleet.Process) map[string]float64 {
	resp, err := http.Get(p.MetricsURL)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]float64{}
	for line := range strings.Lines(string(text)) {
		labels, ok := strings.CutPrefix(line, "winproxy_agent_syncs_total{")
		if !ok {
			continue
		}
		i := strings.LastIndexByte(labels, ' ')
		n, err := strconv.ParseFloat(strings.TrimSpace(labels[i+1:]), 64)
		if err != nil {
			b.Fatal(err)
		}
		out[strings.TrimSuffix(labels[:i], "}")] = n
	}
	return out
}

// logSyncs logs the syncs between two readings of syncsByMode, on one line (a benchmark's log
// keeps only its first ten), and returns their number and how many of them listed HNS.
func logSyncs(b *testing.B, when string, before, after map[string]float64) (total, lists float64) {
	var modes []string
	for _, mode := range slices.Sorted(maps.Keys(after)) {
		if n := after[mode] - before[mode]; n > 0 {
			modes = append(modes, fmt.Sprintf("%v %s", n, mode))
			total += n
			if strings.Contains(mode, `mode="List"`) {
				lists += n
			}
		}
	}
	if total == 0 {
		b.Logf("%s: no sync", when)
	} else {
		b.Logf("%s: %v syncs: %s", when, total, strings.Join(modes, ", "))
	}
	return total, lists
}

func metric(b *testing.B, p *fleet.Process, name string) float64 {
	v, err := p.Metric(name)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// fetch GETs url into the file path.
func fetch(b *testing.B, url, path string) {
	resp, err := http.Get(url)
	if err != nil {
		b.Error(err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		b.Error(err)
		return
	}
	defer f.Close()
	if _, err := f.ReadFrom(resp.Body); err != nil {
		b.Error(err)
	}
}

// cpuOf is the CPU time (user and system) the process has used, from /proc/PID/stat.
func cpuOf(b *testing.B, pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which is in parentheses and may hold spaces.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("reading /proc/%d/stat: %v %v", pid, err1, err2)
	}
	// Clock ticks are 1/100 s on Linux (USER_HZ).
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// monitorOf is the CPU time of the Go runtime's monitor thread (sysmon) of the process: the
// thread runtime.main starts before any other, so the process's second thread. It runs no
// goroutine, so a CPU profile does not see it; it wakes when a goroutine enters a system call
// while every P is idle, then checks every 20 µs or more until they are idle again, so its cost
// follows how often the agent waits (an HNS call, the watch) rather than what it computes.
func monitorOf(b *testing.B, pid int) time.Duration {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		b.Fatal(err)
	}
	var tids []int
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil && tid != pid {
			tids = append(tids, tid)
		}
	}
	if len(tids) == 0 {
		b.Fatalf("process %d has no thread but its first", pid)
	}
	// The scheduler's own count, in nanoseconds: /stat's clock ticks of 10 ms are too coarse for
	// the tens of milliseconds a part of the benchmark gives this thread.
	path := fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, slices.Min(tids))
	text, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	fields := strings.Fields(string(text))
	if len(fields) == 0 {
		b.Fatalf("%s is empty", path)
	}
	ns, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		b.Fatalf("reading %s: %v", path, err)
	}
	return time.Duration(ns)
}

// wire forwards loopback TCP connections to the API server and counts the bytes it sends back:
// what the agent receives from it, as on the wire (TLS and any compression included).
type wire struct {
	l        net.Listener
	received atomic.Int64
}

// startWire listens on a loopback port and forwards each connection to target.
func startWire(b *testing.B, target string) *wire {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	w := &wire{l: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			go forward(c, s, &w.received)
			go forward(s, c, nil)
		}
	}()
	return w
}

func (w *wire) Close() { _ = w.l.Close() }

// forward copies from src to dst, counting into n when given, and closes both when src ends.
func forward(dst, src net.Conn, n *atomic.Int64) {
	var out io.Writer = dst
	if n != nil {
		out = countingWriter{dst, n}
	}
	_, _ = io.Copy(out, src)
	_ = dst.Close()
	_ = src.Close()
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// throughWire writes a copy of kubeconfig whose API server is reached through w.
func throughWire(b *testing.B, kubeconfig, dir string, w *wire) string {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			b.Fatal(err)
		}
		u.Host = w.l.Addr().String()
		c.Server = u.String()
	}
	path := filepath.Join(dir, "kubeconfig-wire")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		b.Fatal(err)
	}
	return path
}

// apiServerPid finds the kube-apiserver process serving u by its --secure-port.
func apiServerPid(b *testing.B, u *url.URL) int {
	want := "--secure-port=" + u.Port()
	procs, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if filepath.Base(args[0]) == "kube-apiserver" && slices.Contains(args, want) {
			return pid
		}
	}
	b.Fatalf("no kube-apiserver process with %s", want)
	return 0
}
