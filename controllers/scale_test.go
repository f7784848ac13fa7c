//go:build !windows

package controllers

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/resolve"
	"github.com/winproxy/winproxy/internal/testbuild"
)

// BenchmarkFleet measures the controller on a fleet of Windows nodes (1,000 by default,
// WINPROXY_SCALE_NODES to change) with maxUnavailable 100%. Each iteration makes three config
// changes and reports, per change, the time until the controller's last WindowsProxyNode write,
// until every WindowsProxyNode carries the new hash and until the config is Ready again (simulated
// agents answer every second), and the WindowsProxyNode writes per node. After each change it
// stops the controller and measures the floor, the same number of bare patches by a minimal client
// (patchFloor), and reports the ratio of the last write to it. After the loop it reports the
// controller's heap and the API writes it makes while nothing changes, with every node's kubelet
// heartbeat updated once in that window. Per change it also logs why each WindowsProxyNode write
// was made (see why), the reconciles by result, and the kube-apiserver's CPU per node
// in the change and in the floor: unlike the times, that does not depend on the share of the
// cores other jobs leave it. It is a benchmark so that `go test ./...` skips it; run it with -v,
// without which go test keeps only a benchmark's first 10 log lines:
//
//	go test ./controllers -run '^$' -bench BenchmarkFleet -benchtime 1x -v
func BenchmarkFleet(b *testing.B) {
	nodes := 1000
	if v := os.Getenv("WINPROXY_SCALE_NODES"); v != "" {
		var err error
		if nodes, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	b.Cleanup(func() { cleanup(b) })
	start := time.Now()
	createNodes(b, rolloutNodes("scale-", nodes)...)
	b.Logf("created %d nodes in %v", nodes, time.Since(start).Round(time.Millisecond))

	heapBefore := heapInUse()
	c := startController(b)
	startWatchingAgents(b, "scale-")
	start = time.Now()
	createConfig(b, testbuild.Config("scale", func(c *winproxyv1alpha1.WindowsProxyConfig) {
		c.Spec.Rollout.MaxUnavailable = ptrTo(intstr.FromString("100%"))
	}))
	<-allUpdated(b, nodes, nil)
	b.Logf("new config: every WindowsProxyNode created in %v", time.Since(start).Round(time.Millisecond))
	waitProgrammed(b, "scale", nodes)
	b.Logf("new config: Ready in %v", time.Since(start).Round(time.Millisecond))

	const changesPerOp = 3
	var specs, written, ready, floor time.Duration
	wpnWrites := 0
	b.ResetTimer()
	for i := range b.N * changesPerOp {
		old := hashes(b)
		done := allUpdated(b, nodes, old)
		before, whyBefore := c.wpnSpecWrites(), c.writes.wpnReasons()
		recsBefore := reconcileResults(b)
		apiBefore := apiServerFigures(b)
		watchReopens.Store(0)
		c.writes.markFirst()
		start := time.Now()
		if err := patchConfig(ctx, "scale", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Sync.PeriodSeconds = int32(31 + i%3000) }); err != nil {
			b.Fatal(err)
		}
		at := <-done
		if at.IsZero() {
			b.FailNow() // allUpdated said why; a zero time would make the figures nonsense
		}
		apiChange := apiServerFigures(b).minus(apiBefore)
		specs += at.Sub(start)
		written += c.writes.lastAt().Sub(start)
		waitProgrammed(b, "scale", nodes)
		ready += time.Since(start)
		wpnWrites += c.wpnSpecWrites() - before
		// The floor, right after the change so that both meet the machine's load alike.
		c.stop()
		apiBefore = apiServerFigures(b)
		f := patchFloor(b, nodes)
		apiFloor := apiServerFigures(b).minus(apiBefore)
		floor += f
		last := c.writes.lastAt().Sub(start)
		b.Logf("change %d: first write after %v, last write after %v, the floor %v: %.2fx", i+1, c.writes.firstAt().Sub(start).Round(time.Millisecond), last.Round(time.Millisecond), f.Round(time.Millisecond), last.Seconds()/f.Seconds())
		b.Logf("change %d: WindowsProxyNode writes by why: %v; reconciles by result: %v", i+1, diff(c.writes.wpnReasons(), whyBefore), diff(reconcileResults(b), recsBefore))
		b.Logf("change %d: kube-apiserver CPU per node until every spec was seen %.1f ms (%d watchers closed as unresponsive, %d of them the benchmark's), in the floor %.1f ms (%d)",
			i+1, 1000*apiChange.cpu/float64(nodes), int(apiChange.terminatedWatchers), watchReopens.Load(), 1000*apiFloor.cpu/float64(nodes), int(apiFloor.terminatedWatchers))
		c = restartController(b)
	}
	b.StopTimer()
	n, sum := reconcileTime(b)
	b.Logf("%d reconciles so far, %.1f ms each on average", n, 1000*sum/float64(n))
	per := func(d time.Duration) float64 { return d.Seconds() / float64(b.N*changesPerOp) }
	b.ReportMetric(per(specs), "s/change-to-all-specs")
	b.ReportMetric(per(written), "s/change-to-last-write")
	b.ReportMetric(per(ready), "s/change-to-ready")
	b.ReportMetric(per(floor), "s/floor")
	b.ReportMetric(written.Seconds()/floor.Seconds(), "last-write/floor")
	b.ReportMetric(float64(wpnWrites)/float64(b.N*changesPerOp*nodes), "writes/node/change")

	heap := float64(heapInUse()-heapBefore) / (1 << 20)
	b.ReportMetric(heap, "MiB-heap")
	b.Logf("per change: the controller's last write after %.2f s (%.2fx the %.2f s of %d bare patches), every spec seen by a watch after %.2f s, Ready after %.2f s; %d WindowsProxyNode writes for %d changes; heap grew %.1f MiB with the controller",
		per(written), written.Seconds()/floor.Seconds(), per(floor), nodes, per(specs), per(ready), wpnWrites, b.N*changesPerOp, heap)

	// A quiet window: nothing changes but the kubelets' heartbeats.
	const window = 15 * time.Second
	writesBefore, reconcilesBefore := c.writes.total(), reconciles(b)
	end := time.Now().Add(window)
	kubeletHeartbeat(b, nodes)
	time.Sleep(time.Until(end))
	writes, recs := c.writes.total()-writesBefore, reconciles(b)-reconcilesBefore
	b.ReportMetric(float64(writes)*float64(time.Minute)/float64(window), "writes/quiet-min")
	b.Logf("quiet %v with %d node heartbeats: %d controller writes, %.0f reconciles; all writes of the last controller: %v", window, nodes, writes, recs, c.writes.snapshot())
}

// restartController starts the config controller again and waits for its first reconcile, which
// must write nothing: the floor's patches leave every WindowsProxyNode's spec as it was.
func restartController(tb testing.TB) *controller {
	tb.Helper()
	before := reconciles(tb)
	c := startController(tb)
	eventually(tb, 5*time.Minute, "the restarted controller's first reconcile", func() (bool, string) {
		return reconciles(tb) > before, ""
	})
	if n := c.writes.total(); n != 0 {
		tb.Fatalf("the restarted controller wrote %d times: %v", n, c.writes.snapshot())
	}
	return c
}

// wpnSpecWrites is the number of WindowsProxyNode writes other than status the controller made.
func (c *controller) wpnSpecWrites() int {
	n := 0
	snap := c.writes.snapshot()
	for _, verb := range []string{"create", "patch", "update"} {
		n += snap[verb+" *v1alpha1.WindowsProxyNode"]
	}
	return n
}

// floorInFlight is how many patches the floor keeps in flight: as many as the controller
// (writeWorkers). More are not a fairer floor on this machine: 256 at a time were faster in one
// 1,000-node run and slower in others, and at 5,000 nodes they made the apiserver time out.
const floorInFlight = writeWorkers

// patchFloor is the time n bare patches of the WindowsProxyNodes scale-0..n-1 take, sent by a
// client without cache or client-side rate limit, floorInFlight at a time: the apiserver's cost
// of a fan-out, which no controller can beat. Each patch has the size of a config change's (a
// sync period, the hash, the updated-at annotation) but sets an annotation of its own, so that
// every spec stays as the controller wrote it. Patches are built before the clock starts.
func patchFloor(tb testing.TB, n int) time.Duration {
	tb.Helper()
	ctx := context.Background()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS = -1
	cl, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		tb.Fatal(err)
	}
	patches := make([][]byte, n)
	for i := range n {
		w := &winproxyv1alpha1.WindowsProxyNode{}
		if err := cl.Get(ctx, client.ObjectKey{Name: fmt.Sprintf("scale-%d", i)}, w); err != nil {
			tb.Fatal(err)
		}
		change := w.DeepCopy()
		change.Spec.Proxy.Sync.PeriodSeconds++
		change.Spec.Hash = resolve.Hash(&change.Spec.Proxy)
		metav1.SetMetaDataAnnotation(&change.ObjectMeta, UpdatedAtAnnotation, time.Now().UTC().Format(time.RFC3339))
		size, err := client.MergeFrom(w).Data(change)
		if err != nil {
			tb.Fatal(err)
		}
		const frame = `{"metadata":{"annotations":{"bench.winproxy.io/floor":""}}}`
		// A new value every time, so that each patch is a write.
		value := fmt.Sprintf("%020d", time.Now().UnixNano())
		value += strings.Repeat("x", max(0, len(size)-len(frame)-len(value)))
		patches[i] = fmt.Appendf(nil, `{"metadata":{"annotations":{"bench.winproxy.io/floor":%q}}}`, value)
	}
	next := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for range floorInFlight {
		wg.Go(func() {
			for i := range next {
				w := &winproxyv1alpha1.WindowsProxyNode{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("scale-%d", i)}}
				errs <- cl.Patch(ctx, w, client.RawPatch(types.MergePatchType, patches[i]))
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			tb.Fatal(err)
		}
	}
	tb.Logf("floor: %d bare patches of %d bytes, %d in flight, in %v", n, len(patches[0]), floorInFlight, took.Round(time.Millisecond))
	return took
}

func patchConfig(ctx context.Context, name string, mutate func(*winproxyv1alpha1.WindowsProxyConfig)) error {
	c := &winproxyv1alpha1.WindowsProxyConfig{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
		return err
	}
	before := c.DeepCopy()
	mutate(c)
	return env.Client.Patch(ctx, c, client.MergeFrom(before))
}

// watchReopens counts the watches of WindowsProxyNodes the benchmark's watchers (allUpdated, the
// simulated agents) had to open again after the apiserver closed them.
var watchReopens atomic.Int64

// watchNodes passes each WindowsProxyNode event after resourceVersion rv ("": every object first)
// to handle until ctx ends. A closed watch is opened again from the last version it delivered: one
// opened afresh would send every object first, and at fleet scale the apiserver closed such
// watches as unresponsive while they did, over and over.
func watchNodes(ctx context.Context, wc client.WithWatch, rv string, handle func(watch.EventType, *winproxyv1alpha1.WindowsProxyNode)) {
	for opened := 0; ctx.Err() == nil; opened++ {
		if opened > 0 {
			watchReopens.Add(1)
		}
		w, err := wc.Watch(ctx, &winproxyv1alpha1.WindowsProxyNodeList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			switch o := ev.Object.(type) {
			case *winproxyv1alpha1.WindowsProxyNode:
				rv = o.ResourceVersion
				if ev.Type != watch.Bookmark {
					handle(ev.Type, o)
				}
			case *metav1.Status:
				if o.Code == http.StatusGone {
					rv = "" // too old to resume: start over from every object
				}
			}
		}
	}
}

// allUpdatedTimeout is how long allUpdated waits: a change reached 5,000 nodes in up to 5 min on
// 2 loaded cores, so the wait is well past that, and a timeout fails the benchmark.
const allUpdatedTimeout = 15 * time.Minute

// allUpdated lists the WindowsProxyNodes, watches them from there and sends the time at which n
// of them carry a hash other than their hash in old.
func allUpdated(tb testing.TB, n int, old map[string]string) <-chan time.Time {
	tb.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		tb.Fatal(err)
	}
	var list winproxyv1alpha1.WindowsProxyNodeList
	if err := wc.List(context.Background(), &list); err != nil {
		tb.Fatal(err)
	}
	updated := map[string]bool{}
	for i := range list.Items {
		if w := &list.Items[i]; w.Spec.Hash != old[w.Name] {
			updated[w.Name] = true
		}
	}
	done := make(chan time.Time, 1)
	ctx, cancel := context.WithTimeout(context.Background(), allUpdatedTimeout)
	go func() {
		defer cancel()
		var at time.Time
		if len(updated) == n {
			at = time.Now()
		} else {
			watchNodes(ctx, wc, list.ResourceVersion, func(_ watch.EventType, o *winproxyv1alpha1.WindowsProxyNode) {
				if o.Spec.Hash != old[o.Name] {
					updated[o.Name] = true
				}
				if len(updated) == n && at.IsZero() {
					at = time.Now()
					cancel()
				}
			})
		}
		if at.IsZero() {
			tb.Errorf("only %d of %d WindowsProxyNodes carried a new hash after %v", len(updated), n, allUpdatedTimeout)
		}
		done <- at
	}()
	return done
}

func waitProgrammed(tb testing.TB, name string, n int) {
	tb.Helper()
	eventually(tb, 5*time.Minute, name+" Ready", func() (bool, string) {
		c := &winproxyv1alpha1.WindowsProxyConfig{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, c); err != nil {
			return false, err.Error()
		}
		r := cond(c, winproxyv1alpha1.ConditionReady)
		return c.Status.ObservedGeneration == c.Generation && r.Status == metav1.ConditionTrue && c.Status.Nodes.Programmed == int32(n), r.Message
	})
}

// kubeletHeartbeat updates every node's Ready condition heartbeat, as kubelets do periodically.
func kubeletHeartbeat(tb testing.TB, n int) {
	tb.Helper()
	ctx := context.Background()
	for i := range n {
		node := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: fmt.Sprintf("scale-%d", i)}, node); err != nil {
			tb.Fatal(err)
		}
		before := node.DeepCopy()
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now()}}
		if err := env.Client.Status().Patch(ctx, node, client.MergeFrom(before)); err != nil {
			tb.Fatal(err)
		}
	}
}

// reconciles reads controller-runtime's reconcile counter of this controller.
func reconciles(tb testing.TB) float64 {
	tb.Helper()
	total := 0.0
	for _, m := range controllerMetric(tb, "controller_runtime_reconcile_total") {
		total += m.GetCounter().GetValue()
	}
	return total
}

// apiServer is what the test kube-apiserver's own metrics say about its work.
type apiServer struct {
	// cpu is the process's CPU time in seconds; terminatedWatchers counts the watchers of
	// WindowsProxyNodes it closed because they did not take their events in time.
	cpu, terminatedWatchers float64
}

func (a apiServer) minus(b apiServer) apiServer {
	return apiServer{cpu: a.cpu - b.cpu, terminatedWatchers: a.terminatedWatchers - b.terminatedWatchers}
}

// apiServerFigures reads the test kube-apiserver's /metrics: its CPU time tells what a fan-out
// costs it whatever share of the machine's cores it got, which other jobs change from minute to
// minute.
func apiServerFigures(tb testing.TB) apiServer {
	tb.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		tb.Fatal(err)
	}
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	var out apiServer
	for line := range strings.Lines(string(body)) {
		fields := strings.Fields(line)
		if len(fields) != 2 {
			continue
		}
		v, err := strconv.ParseFloat(fields[1], 64)
		switch {
		case err != nil:
		case fields[0] == "process_cpu_seconds_total":
			out.cpu = v
		case fields[0] == `apiserver_terminated_watchers_total{group="winproxy.io",resource="windowsproxynodes"}`:
			out.terminatedWatchers = v
		}
	}
	return out
}

// diff is after minus before, by key, without the keys that did not change.
func diff[V int | float64](after, before map[string]V) map[string]V {
	out := map[string]V{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// reconcileResults counts the reconciles so far by result (success, error, requeue,
// requeue_after), the workqueue's retries and the reconciles' seconds.
func reconcileResults(tb testing.TB) map[string]float64 {
	tb.Helper()
	out := map[string]float64{}
	for _, m := range controllerMetric(tb, "controller_runtime_reconcile_total") {
		for _, l := range m.GetLabel() {
			if l.GetName() == "result" {
				out[l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	families, err := metrics.Registry.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "workqueue_retries_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == controllerName {
					out["retries"] += m.GetCounter().GetValue()
				}
			}
		}
	}
	_, out["seconds"] = reconcileTime(tb)
	return out
}

// reconcileTime returns the count, total and largest bucket bound of reconcile durations.
func reconcileTime(tb testing.TB) (count uint64, sum float64) {
	tb.Helper()
	for _, m := range controllerMetric(tb, "controller_runtime_reconcile_time_seconds") {
		count += m.GetHistogram().GetSampleCount()
		sum += m.GetHistogram().GetSampleSum()
	}
	return count, sum
}

func controllerMetric(tb testing.TB, name string) []*dto.Metric {
	return controllerMetricOf(tb, controllerName, name)
}

// controllerMetricOf is metric name of controller-runtime's controller named controller.
func controllerMetricOf(tb testing.TB, controller, name string) []*dto.Metric {
	families, err := metrics.Registry.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	var out []*dto.Metric
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					out = append(out, m)
				}
			}
		}
	}
	return out
}

// heapInUse is the process's live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}
