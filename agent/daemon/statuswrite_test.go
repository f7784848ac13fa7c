package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/winproxy/winproxy/agent/apply"
	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/nodestatus"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// TestStatusBuildSkippedWhileNothingChanged walks the status writes of a few syncs: a build is
// skipped only when the WindowsProxyNode and the report's inputs are those of the last build that
// found nothing to write; a write, the controller's or the agent's own, or another figure in the
// report builds again.
func TestStatusBuildSkippedWhileNothingChanged(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	node := &v1alpha1.WindowsProxyNode{ObjectMeta: metav1.ObjectMeta{Name: "win-1", Generation: 1}, Spec: v1alpha1.WindowsProxyNodeSpec{Hash: "h1"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(node).WithStatusSubresource(node).Build()
	a := &agent{client: c, reader: c, log: logr.Discard()}
	ctx := context.Background()
	read := func() *v1alpha1.WindowsProxyNode {
		t.Helper()
		w := &v1alpha1.WindowsProxyNode{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(node), w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	t0 := time.Date(2026, 12, 4, 22, 0, 0, 0, time.UTC)
	report := func(at time.Duration, remote int) syncReport {
		return syncReport{
			effective: engine.Effective{Programmable: true, IPFamilies: []v1alpha1.IPFamily{v1alpha1.IPv4}},
			result:    apply.Result{LBsDesired: 3, LBsProgrammed: 3, RemoteEndpoints: remote, Writes: map[apply.Write]int{apply.WriteEPCreate: int(at / time.Second)}},
			finished:  t0.Add(at), duration: time.Millisecond,
		}
	}
	builds := 0
	var older *v1alpha1.WindowsProxyNode
	write := func(w *v1alpha1.WindowsProxyNode, r syncReport) {
		t.Helper()
		inputs := nodestatus.Inputs(r.sync())
		if err := a.writeStatus(ctx, w, &inputs, func(w *v1alpha1.WindowsProxyNode) v1alpha1.WindowsProxyNodeStatus {
			builds++
			return buildStatus(w.Status, w, r)
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		name string
		// wpn is the object the sync read; r its report.
		wpn func() *v1alpha1.WindowsProxyNode
		r   syncReport
		// built says whether the status was built.
		built bool
	}{
		{"first report, written", read, report(0, 2), true},
		{"the write read back, nothing to write", read, report(time.Second, 2), true},
		{"an event later, same figures: skipped", func() *v1alpha1.WindowsProxyNode { older = read(); return older }, report(2*time.Second, 2), false},
		{"another figure: built and written", read, report(3*time.Second, 3), true},
		// The informer may not have seen the write yet: the status it holds says what the
		// skipped build would have found, not what was written since.
		{"the cache from before that write, first figures: built", func() *v1alpha1.WindowsProxyNode { return older.DeepCopy() }, report(4*time.Second, 2), true},
		{"read back, same figures: built, nothing to write", read, report(5*time.Second, 3), true},
		{"same again: skipped", read, report(6*time.Second, 3), false},
	} {
		before := builds
		write(step.wpn(), step.r)
		if built := builds > before; built != step.built {
			t.Errorf("%s: built = %v, want %v", step.name, built, step.built)
		}
	}
	if got := read().Status.RemoteEndpoints; got != 3 {
		t.Errorf("status says %d remote endpoints, want 3", got)
	}

	// The controller's write (AgentAlive) gives the object a new resourceVersion: built again.
	w := read()
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionAgentAlive, Status: metav1.ConditionTrue, Reason: "HeartbeatRenewed", Message: "alive"})
	if err := c.Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	before := builds
	write(read(), report(7*time.Second, 3))
	if builds == before {
		t.Error("a status the controller wrote since was not built again")
	}
}
