package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

// TestHeartbeat walks one agent's Lease through its life: created, renewed every beat, frozen
// with the agent's last word while the sync loop is stuck (written once), renewed again after,
// and read again after someone else changed it.
func TestHeartbeat(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := coordinationv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	writes := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.CreateOption) error {
			writes++
			return c.Create(ctx, obj, o...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.UpdateOption) error {
			writes++
			return c.Update(ctx, obj, o...)
		},
	}).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	stuck := ""
	afters := 0
	h := &heartbeat{
		client: c, key: client.ObjectKey{Namespace: "winproxy-system", Name: "win-1"}, interval: 10 * time.Second,
		clock: clk, log: logr.Discard(), stuck: func() string { return stuck }, after: func(context.Context) { afters++ },
	}
	ctx := context.Background()
	read := func() *coordinationv1.Lease {
		t.Helper()
		l := &coordinationv1.Lease{}
		if err := c.Get(ctx, h.key, l); err != nil {
			t.Fatal(err)
		}
		return l
	}

	h.beat(ctx)
	l := read()
	if l.Labels[v1alpha1.HeartbeatLabel] != "true" || *l.Spec.HolderIdentity != "win-1" || *l.Spec.LeaseDurationSeconds != 40 || !l.Spec.RenewTime.Time.Equal(clk.Now()) {
		t.Fatalf("first beat wrote %+v %+v, want a labelled Lease held by win-1 for 40s, renewed now", l.Labels, l.Spec)
	}

	clk.Step(10 * time.Second)
	h.beat(ctx)
	if l = read(); !l.Spec.RenewTime.Time.Equal(clk.Now()) {
		t.Errorf("renew time %v after the second beat, want %v", l.Spec.RenewTime, clk.Now())
	}

	stuck = "HNS has not answered and no sync has completed for 2m0s"
	renewed := l.Spec.RenewTime.Time
	clk.Step(10 * time.Second)
	h.beat(ctx)
	clk.Step(10 * time.Second)
	before := writes
	h.beat(ctx)
	if writes != before {
		t.Errorf("a second beat while stuck wrote %d times, want once per stuck spell", writes-before)
	}
	l = read()
	if l.Annotations[v1alpha1.SyncLoopStuckAnnotation] != stuck || !l.Spec.RenewTime.Time.Equal(renewed) {
		t.Errorf("stuck beat wrote %v renewed %v, want the agent's words and the renew time left at %v", l.Annotations, l.Spec.RenewTime, renewed)
	}

	stuck = ""
	clk.Step(10 * time.Second)
	h.beat(ctx)
	if l = read(); l.Annotations[v1alpha1.SyncLoopStuckAnnotation] != "" || !l.Spec.RenewTime.Time.Equal(clk.Now()) {
		t.Errorf("after progress: annotations %v renewed %v, want the word gone and renewed now", l.Annotations, l.Spec.RenewTime)
	}

	// Someone else changed the Lease: the write fails on its stale copy, the next beat reads it
	// again and renews.
	l.Spec.HolderIdentity = ptrTo("someone")
	if err := c.Update(ctx, l); err != nil {
		t.Fatal(err)
	}
	clk.Step(10 * time.Second)
	h.beat(ctx)
	clk.Step(10 * time.Second)
	h.beat(ctx)
	if l = read(); *l.Spec.HolderIdentity != "win-1" || !l.Spec.RenewTime.Time.Equal(clk.Now()) {
		t.Errorf("after a conflict: holder %s renewed %v, want win-1 renewed now", *l.Spec.HolderIdentity, l.Spec.RenewTime)
	}
	if afters != 7 {
		t.Errorf("after ran %d times, want once per beat (7)", afters)
	}
}

func ptrTo[T any](v T) *T { return &v }
