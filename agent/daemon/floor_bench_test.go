//go:build linux

package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/agent/engine/enginetest"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/hnsrpc"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/agent/selectors"
)

// The floor of an event (BenchmarkAgent's floor-* figures) is what a proxy costs that does
// nothing but the work any proxy must do for one: a process that receives the EndpointSlice
// update through client-go's own informer (protobuf, the agent's kubeconfig and label selector,
// managed fields dropped) and makes the HNS calls the agent makes for it, with the same
// documents, over the same transport, one after another on the informer's handler. It has no
// engine, no model of HNS, no ledger, no status, no metrics, no health servers and no timeout
// around a call; it knows only the moves the churn makes (one remote endpoint's address for
// another). It runs on the host the agent left, after the agent stopped, with the agent's Go
// runtime settings (one thread, GOGC=25, and WINPROXY_BENCH_AGENT_ENV), and is measured as the
// agent is. An event's CPU over its floor is what the agent's own work and safety cost: the
// machine's hour-to-hour drift, which moves both, cancels out of the ratio.

// floorEnv, set, makes the test binary the floor's process (TestMain) with the floorConfig it
// holds as JSON.
const floorEnv = "WINPROXY_BENCH_FLOOR"

type floorConfig struct {
	Kubeconfig string
	// HNS is the simulated host's socket, Network the name of its network.
	HNS, Network string
}

func TestMain(m *testing.M) {
	if v := os.Getenv(floorEnv); v != "" {
		var cfg floorConfig
		err := json.Unmarshal([]byte(v), &cfg)
		if err == nil {
			err = runFloor(cfg, os.Stdin, os.Stdout)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runFloor runs the floor's proxy: it says "synced" once its informer has listed the slices, then
// answers each line read from in with its counts ("updates moves allocated-bytes gc-cycles"), and
// returns when in ends or a move cannot be made.
func runFloor(cfg floorConfig, in io.Reader, out io.Writer) error {
	ctx := context.Background()
	rest, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return err
	}
	rest.ContentType = runtime.ContentTypeProtobuf
	cs, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return err
	}
	h, err := hnsrpc.NewClient(cfg.HNS)
	if err != nil {
		return err
	}
	defer h.Close()
	p, err := newBareProxy(ctx, h, cfg.Network)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selectors.EndpointSliceLabels.String() }),
		// The agent's cache drops them the same way.
		informers.WithTransform(cache.TransformStripManagedFields()))
	inf := factory.Discovery().V1().EndpointSlices().Informer()
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(old, new any) {
		p.update(ctx, old.(*discoveryv1.EndpointSlice), new.(*discoveryv1.EndpointSlice))
	}}); err != nil {
		return err
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	if !toolscache.WaitForCacheSync(stop, inf.HasSynced) {
		return errors.New("the EndpointSlice informer did not sync")
	}
	fmt.Fprintln(out, "synced")
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		if err := p.failure(); err != nil {
			return err
		}
		heap := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
		metrics.Read(heap)
		fmt.Fprintln(out, p.updates.Load(), p.moves.Load(), heap[0].Value.Uint64(), heap[1].Value.Uint64())
	}
	return p.failure()
}

// bareProxy programs the churn's moves on the host the agent left: the remote endpoints by
// address, and the load balancers by the endpoints they use, as HNS lists them at start.
type bareProxy struct {
	hns       hns.Client
	networkID string
	routes    []hns.RemoteSubnetRoute
	modify    bool // HNS modifies a load balancer in place (2025), as the agent then does

	byAddr map[netip.Addr]string
	lbs    map[string]hns.LoadBalancer
	users  map[string][]string // an endpoint's ID → the IDs of the load balancers that use it

	updates, moves atomic.Int64
	mu             sync.Mutex
	err            error
}

func newBareProxy(ctx context.Context, h hns.Client, network string) (*bareProxy, error) {
	v, err := h.Version(ctx)
	if err != nil {
		return nil, err
	}
	nw, err := h.GetNetworkByName(ctx, network)
	if err != nil {
		return nil, err
	}
	p := &bareProxy{hns: h, networkID: nw.ID, routes: nw.RemoteSubnetRoutes, modify: hns.CapabilitiesFor(v).ModifyLoadBalancer,
		byAddr: map[netip.Addr]string{}, lbs: map[string]hns.LoadBalancer{}, users: map[string][]string{}}
	eps, err := h.ListEndpoints(ctx, nw.ID)
	if err != nil {
		return nil, err
	}
	for _, ep := range eps {
		if ep.Remote && len(ep.IPs) == 1 {
			p.byAddr[ep.IPs[0]] = ep.ID
		}
	}
	lbs, err := h.ListLoadBalancers(ctx)
	if err != nil {
		return nil, err
	}
	for _, lb := range lbs {
		p.add(lb)
	}
	return p, nil
}

func (p *bareProxy) add(lb hns.LoadBalancer) {
	p.lbs[lb.ID] = lb
	for _, id := range lb.BackendEndpointIDs {
		p.users[id] = append(p.users[id], lb.ID)
	}
}

func (p *bareProxy) remove(id string) {
	for _, ep := range p.lbs[id].BackendEndpointIDs {
		p.users[ep] = slices.DeleteFunc(p.users[ep], func(lb string) bool { return lb == id })
	}
	delete(p.lbs, id)
}

// update programs a slice's update: nothing when its addresses are the same (a label, a
// condition), else the churn's move, in the agent's order: the new remote endpoint, its load
// balancers (deleted and created again, or modified), the old endpoint.
func (p *bareProxy) update(ctx context.Context, old, new *discoveryv1.EndpointSlice) {
	// Counted once handled, so that a benchmark that saw every update counted finds its moves made.
	defer p.updates.Add(1)
	gone, came := moved(old, new)
	if !gone.IsValid() {
		return
	}
	if err := p.move(ctx, gone, came); err != nil {
		p.mu.Lock()
		if p.err == nil {
			p.err = fmt.Errorf("moving %s to %s in %s: %w", gone, came, new.Name, err)
		}
		p.mu.Unlock()
		return
	}
	p.moves.Add(1)
}

func (p *bareProxy) move(ctx context.Context, gone, came netip.Addr) error {
	oldID, ok := p.byAddr[gone]
	if !ok {
		return errors.New("no remote endpoint has the old address")
	}
	ep := hns.Endpoint{Name: hns.OwnedEndpointName(came), IPs: []netip.Addr{came}, MAC: hns.ConjureMAC(came), Remote: true}
	for _, r := range p.routes {
		if r.DestinationPrefix.Contains(came) {
			ep.ProviderAddress = r.ProviderAddress
		}
	}
	created, err := p.hns.CreateEndpoint(ctx, p.networkID, ep)
	if err != nil {
		return err
	}
	p.byAddr[came] = created.ID
	for _, id := range slices.Clone(p.users[oldID]) {
		lb := p.lbs[id]
		lb.BackendEndpointIDs = slices.Clone(lb.BackendEndpointIDs)
		lb.BackendEndpointIDs[slices.Index(lb.BackendEndpointIDs, oldID)] = created.ID
		if p.modify {
			lb, err = p.hns.ModifyLoadBalancer(ctx, id, lb)
		} else if err = p.hns.DeleteLoadBalancer(ctx, id); err == nil {
			lb, err = p.hns.CreateLoadBalancer(ctx, lb)
		}
		if err != nil {
			return err
		}
		p.remove(id)
		p.add(lb)
	}
	if err := p.hns.DeleteEndpoint(ctx, oldID); err != nil {
		return err
	}
	delete(p.byAddr, gone)
	delete(p.users, oldID)
	return nil
}

// moved is the address an update took from the slice and the one it gave it, both invalid when
// its addresses are the same.
func moved(old, new *discoveryv1.EndpointSlice) (gone, came netip.Addr) {
	addrs := func(s *discoveryv1.EndpointSlice) []netip.Addr {
		out := make([]netip.Addr, 0, len(s.Endpoints))
		for _, ep := range s.Endpoints {
			if a, err := netip.ParseAddr(ep.Addresses[0]); err == nil {
				out = append(out, a)
			}
		}
		return out
	}
	before, after := addrs(old), addrs(new)
	for _, a := range before {
		if !slices.Contains(after, a) {
			gone = a
		}
	}
	for _, a := range after {
		if !slices.Contains(before, a) {
			came = a
		}
	}
	if !gone.IsValid() || !came.IsValid() {
		return netip.Addr{}, netip.Addr{}
	}
	return gone, came
}

func (p *bareProxy) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// floorProcess is a running floor, started by the benchmark from its own test binary.
type floorProcess struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr strings.Builder
}

func startFloor(b *testing.B, cfg floorConfig) *floorProcess {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		b.Fatal(err)
	}
	f := &floorProcess{cmd: exec.Command(exe)}
	// The agent's runtime settings (cmd/winproxy-agent: one thread and GOGC=25 unless its
	// environment says otherwise), then what the benchmark gives the agent's environment.
	f.cmd.Env = append(append(os.Environ(), "GOMAXPROCS=1", "GOGC=25", floorEnv+"="+string(js)), strings.Fields(os.Getenv("WINPROXY_BENCH_AGENT_ENV"))...)
	f.cmd.Stderr = &f.stderr
	if f.in, err = f.cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	stdout, err := f.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := f.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	f.out = bufio.NewScanner(stdout)
	if !f.out.Scan() || f.out.Text() != "synced" {
		b.Fatalf("the floor did not start: %q\n%s", f.out.Text(), f.stderr.String())
	}
	return f
}

// floorCounts is what the floor has done so far.
type floorCounts struct {
	// updates it handled, moves it programmed, bytes it allocated and garbage collections it made.
	updates, moves, allocated, gcs int
}

// counts asks the floor what it has done.
func (f *floorProcess) counts(b *testing.B) floorCounts {
	if _, err := io.WriteString(f.in, "?\n"); err != nil {
		b.Fatalf("the floor ended: %v\n%s", err, f.stderr.String())
	}
	if !f.out.Scan() {
		b.Fatalf("the floor ended:\n%s", f.stderr.String())
	}
	var c floorCounts
	if _, err := fmt.Sscan(f.out.Text(), &c.updates, &c.moves, &c.allocated, &c.gcs); err != nil {
		b.Fatalf("the floor answered %q: %v", f.out.Text(), err)
	}
	return c
}

// await waits until the floor has handled updates updates.
func (f *floorProcess) await(b *testing.B, updates int) {
	deadline := time.Now().Add(time.Minute)
	for {
		if f.counts(b).updates >= updates {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal("the floor did not receive every update within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (f *floorProcess) stop() {
	_ = f.in.Close()
	_ = f.cmd.Process.Kill()
	_ = f.cmd.Wait()
}

// floor measures the floor of the churn's events, after the agent's: n updates that change a
// slice's label (reception alone) and n of the churn's moves from its event from on, on the host
// the agent left, and reports each as the agent's figures are (floor-cpu-ms/slice-label,
// floor-cpu-ms/event with its monitor's share, HNS writes, allocations and collections) and the
// agent's event over it (agent-over-floor).
func floor(b *testing.B, cfg floorConfig, host *sim.Sim, c client.Client, cl *enginetest.Cluster, slices []*discoveryv1.EndpointSlice, from, n int, pace time.Duration, agentEvent float64) {
	f := startFloor(b, cfg)
	defer f.stop()
	pid := f.cmd.Process.Pid
	idleStart, idleCPU0, idleMonitor0 := time.Now(), cpuOf(b, pid), monitorOf(b, pid)
	time.Sleep(floorIdle)
	idleRate := float64(cpuOf(b, pid)-idleCPU0) / float64(time.Since(idleStart))
	idleMonitorRate := float64(monitorOf(b, pid)-idleMonitor0) / float64(time.Since(idleStart))
	received := 0
	for _, part := range []struct {
		name  string
		moves int
		send  func()
	}{
		{"slice-label", 0, func() { paced(b, n, pace, label(c, func(i int) client.Object { return slices[(from+i)%len(slices)] })) }},
		{"event", n, func() { churn(b, c, cl, slices, from, n, pace) }},
	} {
		before := f.counts(b)
		writes0 := host.Counts().Writes
		start, cpu0, monitor0 := time.Now(), cpuOf(b, pid), monitorOf(b, pid)
		part.send()
		received += n
		f.await(b, received)
		wall := float64(time.Since(start))
		net := float64(cpuOf(b, pid)-cpu0) - idleRate*wall
		monitor := float64(monitorOf(b, pid)-monitor0) - idleMonitorRate*wall
		after := f.counts(b)
		if moves := after.moves - before.moves; moves != part.moves {
			b.Fatalf("floor, %s: %d moves programmed, want %d", part.name, moves, part.moves)
		}
		b.ReportMetric(net/float64(n)/1e6, "floor-cpu-ms/"+part.name)
		b.ReportMetric(monitor/float64(n)/1e6, "floor-monitor-cpu-ms/"+part.name)
		b.ReportMetric(float64(host.Counts().Writes-writes0)/float64(n), "floor-hns-writes/"+part.name)
		b.ReportMetric(float64(after.allocated-before.allocated)/float64(n)/1024, "floor-allocated-KiB/"+part.name)
		b.ReportMetric(float64(after.gcs-before.gcs)/float64(n)*1000, "floor-gc-cycles/1000-"+part.name)
		if part.name == "event" {
			b.ReportMetric(agentEvent/(net/float64(n)/1e6), "agent-over-floor")
		}
	}
}

// floorIdle is how long the floor's idle CPU is measured: it has no periodic work.
const floorIdle = 10 * time.Second
