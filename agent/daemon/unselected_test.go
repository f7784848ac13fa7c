package daemon

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/healthcheck"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// unselectedHeapBound is the most the heap of an agent no config selects may grow over the churn
// below (10,000 changes of 50 Services): the engine holds one copy of each Service, not each
// change. Before the fix the queue kept every change: 60 MB here.
const unselectedHeapBound = 2 << 20

// An agent on a node no config selects (every node before the first config, and those a staged
// migration leaves out) keeps a flat heap under churn: each sync drains the queued changes into
// the engine cache, though it programs nothing.
func TestUnselectedAgentKeepsAFlatHeap(t *testing.T) {
	a := unselectedAgent(t)
	setService := func(c *engine.Incremental, o metav1.Object) { c.SetService(o.(*corev1.Service)) }
	churn := func(rounds int) {
		for r := range rounds {
			for i := range 50 {
				a.changed(churnedService(i, r), setService, false)
			}
			if err := a.sync(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	churn(20)
	before := heapInUse()
	churn(200)
	grew := heapInUse() - before
	if n := len(a.pending); n != 0 {
		t.Errorf("%d changes still queued after the syncs of an unselected agent", n)
	}
	if grew > unselectedHeapBound {
		t.Errorf("the heap grew by %d KiB over 10,000 changes, want at most %d KiB", grew>>10, unselectedHeapBound>>10)
	}
	t.Logf("heap growth over 10,000 changes of 50 Services on an unselected agent: %d KiB (bound %d KiB)", grew>>10, unselectedHeapBound>>10)
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// churnedService is Service i as round r of a rolling change leaves it, with the annotations
// that make real Services weigh a few KiB.
func churnedService(i, r int) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("svc-%d", i), ResourceVersion: fmt.Sprint(r),
			Annotations: map[string]string{"last-applied": strings.Repeat(fmt.Sprint(r), 2000)}},
		Spec: corev1.ServiceSpec{ClusterIP: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), Ports: []corev1.ServicePort{{Port: 80}}},
	}
}

// unselectedAgent is an agent whose node has no WindowsProxyNode.
func unselectedAgent(t *testing.T) *agent {
	t.Helper()
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "win-1"}}
	a := &agent{
		opts:    Options{NodeName: node.Name, Clock: clk},
		log:     logr.Discard(),
		client:  fake.NewClientBuilder().WithScheme(scheme).WithObjects(node).Build(),
		events:  events.NewFakeRecorder(100),
		metrics: NewMetrics(prometheus.NewRegistry()),
		engine:  engine.NewIncremental(),
		runner:  NewRunner(clk, time.Second, 30*time.Second),
		health:  &healthServers{proxy: healthcheck.NewProxyHealth(clk, time.Minute, func() *corev1.Node { return node })},
	}
	a.changes = newChangeTracker(clk.Now(), a.metrics.KubeProxy)
	return a
}
