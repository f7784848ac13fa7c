//go:build !windows

package controllers

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/testbuild"
)

// BenchmarkFleet measures the controller on a fleet of Windows nodes (1,000 by default,
// WINPROXY_SCALE_NODES to change) with maxUnavailable 100%. Each iteration makes three config
// changes and reports, per change, the time until every WindowsProxyNode carries the new hash
// and until the config is Ready again (simulated agents answer every second). After the loop it reports the controller's heap
// and the API writes it makes while nothing changes, with every node's kubelet heartbeat
// updated once in that window. It is a benchmark so that `go test ./...` skips it; run it with
//
//	go test ./controllers -run '^$' -bench BenchmarkFleet -benchtime 1x
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
	var specs, written, ready time.Duration
	b.ResetTimer()
	for i := range b.N * changesPerOp {
		old := hashes(b)
		done := allUpdated(b, nodes, old)
		start := time.Now()
		if err := patchConfig(ctx, "scale", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Sync.PeriodSeconds = int32(31 + i%3000) }); err != nil {
			b.Fatal(err)
		}
		specs += (<-done).Sub(start)
		written += c.writes.lastAt().Sub(start)
		waitProgrammed(b, "scale", nodes)
		ready += time.Since(start)
	}
	b.StopTimer()
	n, sum := reconcileTime(b)
	b.Logf("%d reconciles so far, %.1f ms each on average", n, 1000*sum/float64(n))
	b.ReportMetric(specs.Seconds()/float64(b.N*changesPerOp), "s/change-to-all-specs")
	b.ReportMetric(written.Seconds()/float64(b.N*changesPerOp), "s/change-to-last-write")
	b.ReportMetric(ready.Seconds()/float64(b.N*changesPerOp), "s/change-to-ready")

	heap := float64(heapInUse()-heapBefore) / (1 << 20)
	b.ReportMetric(heap, "MiB-heap")
	per := func(d time.Duration) float64 { return d.Seconds() / float64(b.N*changesPerOp) }
	b.Logf("per change: the controller's last write after %.2f s, every spec seen by a watch after %.2f s, Ready after %.2f s; heap grew %.1f MiB with the controller",
		per(written), per(specs), per(ready), heap)

	// A quiet window: nothing changes but the kubelets' heartbeats.
	const window = 15 * time.Second
	writesBefore, reconcilesBefore := c.writes.total(), reconciles(b)
	end := time.Now().Add(window)
	kubeletHeartbeat(b, nodes)
	time.Sleep(time.Until(end))
	writes, recs := c.writes.total()-writesBefore, reconciles(b)-reconcilesBefore
	b.ReportMetric(float64(writes)*float64(time.Minute)/float64(window), "writes/quiet-min")
	b.Logf("quiet %v with %d node heartbeats: %d controller writes, %.0f reconciles; all writes so far: %v", window, nodes, writes, recs, c.writes.snapshot())
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

// allUpdated watches the WindowsProxyNodes and sends the time at which n of them carry a hash
// other than their hash in old. A closed watch is reopened; its initial events restate every
// object, so nothing is missed.
func allUpdated(tb testing.TB, n int, old map[string]string) <-chan time.Time {
	tb.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		tb.Fatal(err)
	}
	open := func() watch.Interface {
		w, err := wc.Watch(context.Background(), &winproxyv1alpha1.WindowsProxyNodeList{})
		if err != nil {
			tb.Error(err)
			return watch.NewEmptyWatch()
		}
		return w
	}
	w := open()
	done := make(chan time.Time, 1)
	go func() {
		updated := map[string]bool{}
		timeout := time.After(5 * time.Minute)
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					w = open()
					continue
				}
				if o, ok := ev.Object.(*winproxyv1alpha1.WindowsProxyNode); ok && o.Spec.Hash != old[o.Name] {
					updated[o.Name] = true
				}
				if len(updated) == n {
					w.Stop()
					done <- time.Now()
					return
				}
			case <-timeout:
				w.Stop()
				done <- time.Time{}
				return
			}
		}
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
