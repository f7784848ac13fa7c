//go:build !windows

package controllers

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
)

// BenchmarkHeartbeats measures what the agents' heartbeats cost the controller at 1,000 and 5,000
// nodes, beside BenchmarkFleet: every node has a WindowsProxyNode and a heartbeat Lease, and each
// Lease is renewed six times (an agent's quiet minute at the default 10 s interval, here as fast as
// the apiserver takes them). It reports the controller's CPU per renewal (the process's CPU with
// the controller running, less the same renewals' CPU without it), its heap with every Lease and
// WindowsProxyNode cached, and its API writes and heartbeat reconciles during the renewals (the
// goal: none). Run it with
//
//	go test ./controllers -run '^$' -bench BenchmarkHeartbeats -benchtime 1x
func BenchmarkHeartbeats(b *testing.B) {
	for _, nodes := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			for range b.N {
				benchmarkHeartbeats(b, nodes)
			}
		})
	}
}

// renewalsPerQuietMinute is how often an agent renews in a minute at the default interval.
const renewalsPerQuietMinute = 6

func benchmarkHeartbeats(b *testing.B, nodes int) {
	ensureNamespace(b, heartbeatNamespace)
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("beat-%d", i)
	}
	b.Cleanup(func() {
		ctx := context.Background()
		_ = env.Client.DeleteAllOf(ctx, &winproxyv1alpha1.WindowsProxyNode{})
		_ = env.Client.DeleteAllOf(ctx, &coordinationv1.Lease{}, client.InNamespace(heartbeatNamespace))
	})
	start := time.Now()
	leases := createHeartbeatObjects(b, names)
	b.Logf("created %d WindowsProxyNodes and Leases in %v", nodes, time.Since(start).Round(time.Millisecond))

	heapBefore := heapInUse()
	// A grace period longer than the whole run: the setup renews nothing, and a renewal costs the
	// same whatever the grace period (which sets only how often the sweep walks the Leases).
	c := startManager(b, withHeartbeats(time.Hour))
	start = time.Now()
	eventually(b, 10*time.Minute, "every node AgentAlive=True", func() (bool, string) {
		select {
		case err := <-c.done:
			b.Fatalf("the controller stopped: %v", err)
		default:
		}
		alive := 0
		for _, w := range wpns(b) {
			if meta.IsStatusConditionTrue(w.Status.Conditions, winproxyv1alpha1.ConditionAgentAlive) {
				alive++
			}
		}
		return alive == nodes, fmt.Sprintf("%d of %d", alive, nodes)
	})
	b.Logf("every node reported alive in %v (one write per node, once)", time.Since(start).Round(time.Millisecond))
	heap := float64(heapInUse()-heapBefore) / (1 << 20)

	writes, recs := c.writes.total(), heartbeatReconciles(b)
	cpuWith, took := renewAll(b, leases, renewalsPerQuietMinute)
	// Let the last renewals reach the controller's informer before counting.
	time.Sleep(2 * time.Second)
	writes, recs = c.writes.total()-writes, heartbeatReconciles(b)-recs
	c.stop()
	cpuWithout, _ := renewAll(b, leases, renewalsPerQuietMinute)

	renewals := float64(nodes * renewalsPerQuietMinute)
	perRenewal := (cpuWith - cpuWithout).Seconds() / renewals
	b.ReportMetric(perRenewal*1e6, "µs-cpu/renewal")
	b.ReportMetric(heap, "MiB-heap")
	b.ReportMetric(float64(writes), "writes/quiet-min")
	b.ReportMetric(recs/renewals, "reconciles/renewal")
	b.Logf("%d nodes, %.0f renewals in %v: controller CPU %.1f µs per renewal (%v with it, %v without), %d API writes, %.0f heartbeat reconciles; heap %.1f MiB with %d Leases and WindowsProxyNodes cached",
		nodes, renewals, took.Round(time.Millisecond), perRenewal*1e6, cpuWith.Round(time.Millisecond), cpuWithout.Round(time.Millisecond), writes, recs, heap, nodes)
}

// createHeartbeatObjects creates, for each node, a WindowsProxyNode (as the controller would) and
// its heartbeat Lease (as its agent would), and returns the Leases.
func createHeartbeatObjects(tb testing.TB, names []string) []*coordinationv1.Lease {
	tb.Helper()
	leases := make([]*coordinationv1.Lease, len(names))
	parallelEach(tb, len(names), func(ctx context.Context, i int) error {
		w := &winproxyv1alpha1.WindowsProxyNode{
			ObjectMeta: metav1.ObjectMeta{Name: names[i]},
			Spec: winproxyv1alpha1.WindowsProxyNodeSpec{ConfigName: "beats", Hash: "h",
				Proxy: winproxyv1alpha1.ResolvedProxyConfig{Network: winproxyv1alpha1.NetworkSpec{Name: "cbr0", Type: winproxyv1alpha1.NetworkTypeL2Bridge}}},
		}
		if err := env.Client.Create(ctx, w); err != nil {
			return err
		}
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: heartbeatNamespace, Name: names[i],
			Labels: map[string]string{winproxyv1alpha1.HeartbeatLabel: "true"}}}
		l.Spec.HolderIdentity = ptr.To(names[i])
		l.Spec.RenewTime = ptr.To(metav1.NowMicro())
		leases[i] = l
		return env.Client.Create(ctx, l)
	})
	return leases
}

// renewAll renews every Lease rounds times, and returns the process's CPU time meanwhile (user
// and system) and how long it took.
func renewAll(tb testing.TB, leases []*coordinationv1.Lease, rounds int) (time.Duration, time.Duration) {
	tb.Helper()
	before, start := cpuTime(tb), time.Now()
	for range rounds {
		parallelEach(tb, len(leases), func(ctx context.Context, i int) error {
			leases[i].Spec.RenewTime = ptr.To(metav1.NowMicro())
			return env.Client.Update(ctx, leases[i])
		})
	}
	return cpuTime(tb) - before, time.Since(start)
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heartbeatReconciles reads controller-runtime's reconcile counter of the heartbeat controller.
func heartbeatReconciles(tb testing.TB) float64 {
	tb.Helper()
	total := 0.0
	for _, m := range controllerMetricOf(tb, "heartbeat", "controller_runtime_reconcile_total") {
		total += m.GetCounter().GetValue()
	}
	return total
}
