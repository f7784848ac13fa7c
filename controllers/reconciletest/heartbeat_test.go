package reconciletest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers"
)

const (
	heartbeats = "winproxy-heartbeats"
	grace      = 40 * time.Second
)

// lease is node's heartbeat Lease at resourceVersion rv, renewed at t0; stuck is the agent's
// word that its sync loop is stuck, "" when it is not.
func lease(node, rv, stuck string) *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: heartbeats, Name: node, ResourceVersion: rv,
			Labels: map[string]string{winproxyv1alpha1.HeartbeatLabel: "true"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node), RenewTime: ptr.To(metav1.NewMicroTime(t0))},
	}
	if stuck != "" {
		l.Annotations = map[string]string{winproxyv1alpha1.SyncLoopStuckAnnotation: stuck}
	}
	return l
}

// TestHeartbeatReconcile is the heartbeat reconciler's decisions: given the cached objects (and
// those the API server holds, when the cache lags), Reconciles of the node at the given times
// make these writes.
func TestHeartbeatReconcile(t *testing.T) {
	c := config("c", 1, 0)
	win1 := node("win-1", 1, nil)
	programmed := wpn(win1, c, &c.Spec)
	reportedAlive := wpn(win1, c, &c.Spec, alive(metav1.ConditionTrue, winproxyv1alpha1.ReasonHeartbeatRenewed, -time.Hour))
	// The summary of an agent reported lost: nothing vouches for what HNS holds.
	lost := nodeStatus{ObservedGeneration: 1, Conditions: []string{
		"AgentAlive=False/HeartbeatLost", "Degraded=False/AsExpected", "Programmed=Unknown/HeartbeatLost",
		"Ready=Unknown/HeartbeatLost", "Reconciling=False/HeartbeatLost", "Stalled=True/HeartbeatLost",
	}}
	renewed := nodeStatus{ObservedGeneration: 1, Conditions: []string{
		"AgentAlive=True/HeartbeatRenewed", "Degraded=False/AsExpected", "Programmed=True/Synced",
		"Ready=True/Synced", "Reconciling=False/Synced", "Stalled=False/AsExpected",
	}}

	cases := map[string]struct {
		// objects are in the controller's cache; live, when set, are what the API server holds.
		objects, live []client.Object
		// at are the times of the Reconciles, from the reconciler's start at t0.
		at   []time.Duration
		want []write
		// requeue is the last Reconcile's RequeueAfter.
		requeue time.Duration
	}{
		"a renewing agent is reported alive once": {
			objects: []client.Object{programmed, lease("win-1", "1", "")},
			at:      []time.Duration{0, 10 * time.Second, 30 * time.Second},
			want:    []write{{"patch-status", "WindowsProxyNode", "win-1", renewed}},
		},
		"an agent silent for the grace period is lost": {
			objects: []client.Object{reportedAlive, lease("win-1", "1", "")},
			at:      []time.Duration{0, grace + time.Second},
			want:    []write{{"patch-status", "WindowsProxyNode", "win-1", lost}},
		},
		"silent in the cache, renewed in the API server: nothing is written": {
			objects: []client.Object{reportedAlive, lease("win-1", "1", "")},
			live:    []client.Object{lease("win-1", "2", "")},
			at:      []time.Duration{0, grace + time.Second},
		},
		"an agent whose sync loop is stuck says so": {
			objects: []client.Object{reportedAlive, lease("win-1", "1", "the sync loop made no progress for 10m0s")},
			at:      []time.Duration{0},
			want: []write{{"patch-status", "WindowsProxyNode", "win-1", nodeStatus{ObservedGeneration: 1, Conditions: []string{
				"AgentAlive=False/SyncLoopStuck", "Degraded=False/AsExpected", "Programmed=Unknown/SyncLoopStuck",
				"Ready=Unknown/SyncLoopStuck", "Reconciling=False/SyncLoopStuck", "Stalled=True/SyncLoopStuck",
			}}}},
		},
		"a lost agent that renews again is restored": {
			objects: []client.Object{
				wpn(win1, c, &c.Spec, alive(metav1.ConditionFalse, winproxyv1alpha1.ReasonHeartbeatLost, -time.Minute)),
				lease("win-1", "1", ""),
			},
			at: []time.Duration{0},
			// Programmed stays Unknown until the agent reports again: the heartbeat says it
			// runs, not what it programmed.
			want: []write{{"patch-status", "WindowsProxyNode", "win-1", nodeStatus{ObservedGeneration: 1, Conditions: []string{
				"AgentAlive=True/HeartbeatRenewed", "Degraded=False/AsExpected", "Programmed=Unknown/HeartbeatLost",
				"Ready=False/HeartbeatLost", "Reconciling=True/HeartbeatLost", "Stalled=False/AsExpected",
			}}}},
		},
		"a node never seen is given a grace period from the controller's start": {
			objects: []client.Object{programmed},
			at:      []time.Duration{0, grace / 2},
			requeue: grace / 2,
		},
		"a node never seen for the grace period is lost": {
			objects: []client.Object{programmed},
			at:      []time.Duration{0, grace + time.Second},
			want:    []write{{"patch-status", "WindowsProxyNode", "win-1", lost}},
		},
		"an unselected node (no WindowsProxyNode) is never reported": {
			objects: []client.Object{lease("win-1", "1", "")},
			at:      []time.Duration{0, grace + time.Second},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cached := newCluster(t, tc.objects...)
			live := client.Reader(cached)
			if tc.live != nil {
				live = newCluster(t, tc.live...)
			}
			clk := clocktesting.NewFakeClock(t0)
			r := controllers.NewHeartbeatReconciler(cached, live, heartbeats, grace, clk)
			var res ctrl.Result
			for _, at := range tc.at {
				clk.SetTime(t0.Add(at))
				var err error
				if res, err = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "win-1"}}); err != nil {
					t.Fatalf("Reconcile at %v: %v", at, err)
				}
			}
			if diff := cmp.Diff(tc.want, cached.takeWrites(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("writes (-want,+got):\n%s", diff)
			}
			if res.RequeueAfter != tc.requeue {
				t.Errorf("RequeueAfter = %v, want %v", res.RequeueAfter, tc.requeue)
			}
		})
	}
}
