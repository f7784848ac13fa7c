package nodesummary

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

var now = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// cond is a condition as a writer sets it: at the node's generation unless gen says otherwise.
type cond struct {
	typ, status, reason string
	gen                 int64
}

// node is a WindowsProxyNode at generation 2 with spec hash "h2", with the given observed hash and
// conditions.
func node(observedHash string, conds ...cond) *v1alpha1.WindowsProxyNode {
	w := &v1alpha1.WindowsProxyNode{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "WindowsProxyNode"},
		ObjectMeta: metav1.ObjectMeta{Name: "win-1", Generation: 2},
		Spec:       v1alpha1.WindowsProxyNodeSpec{ConfigName: "c", Hash: "h2"},
	}
	w.Status.ObservedHash = observedHash
	w.Status.ObservedGeneration = 2
	for _, c := range conds {
		gen := c.gen
		if gen == 0 {
			gen = 2
		}
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
			Type: c.typ, Status: metav1.ConditionStatus(c.status), Reason: c.reason, Message: c.reason + " message", ObservedGeneration: gen,
		})
	}
	return w
}

var (
	alive      = cond{v1alpha1.ConditionAgentAlive, "True", v1alpha1.ReasonHeartbeatRenewed, 0}
	synced     = cond{v1alpha1.ConditionProgrammed, "True", v1alpha1.ReasonSynced, 0}
	notFailing = cond{v1alpha1.ConditionDegraded, "False", v1alpha1.ReasonAsExpected, 0}
)

// TestKstatus is what kstatus (and so Flux, Argo CD, kubectl wait and helm --wait) reads from a
// WindowsProxyNode in each state its writers produce, once Set has summarised it.
func TestKstatus(t *testing.T) {
	cases := map[string]struct {
		// node is the WindowsProxyNode before Set.
		node *v1alpha1.WindowsProxyNode
		// want is kstatus's verdict; reason the reason of the condition that decided it.
		want   status.Status
		reason string
		// ready is the Ready condition's status.
		ready metav1.ConditionStatus
	}{
		"programmed": {
			node: node("h2", alive, synced, notFailing),
			want: status.CurrentStatus, reason: v1alpha1.ReasonSynced, ready: metav1.ConditionTrue,
		},
		"programmed, before the controller saw any heartbeat": {
			node: node("h2", synced, notFailing),
			want: status.CurrentStatus, reason: v1alpha1.ReasonSynced, ready: metav1.ConditionTrue,
		},
		"catching up: a new spec not acted on yet": {
			node: node("h1", alive, synced, notFailing),
			want: status.InProgressStatus, reason: v1alpha1.ReasonSpecNotObserved, ready: metav1.ConditionFalse,
		},
		"catching up: the spec was edited, same hash, report of the older generation": {
			node: node("h2", alive, cond{v1alpha1.ConditionProgrammed, "True", v1alpha1.ReasonSynced, 1}, notFailing),
			want: status.InProgressStatus, reason: v1alpha1.ReasonSpecNotObserved, ready: metav1.ConditionFalse,
		},
		"catching up: changes older than the health timeout": {
			node: node("h2", alive, cond{v1alpha1.ConditionProgrammed, "False", v1alpha1.ReasonProgrammingBehind, 0}, notFailing),
			want: status.InProgressStatus, reason: v1alpha1.ReasonProgrammingBehind, ready: metav1.ConditionFalse,
		},
		"waiting for the network to come back": {
			node: node("h2", alive, cond{v1alpha1.ConditionProgrammed, "False", v1alpha1.ReasonWaitingForNetwork, 0}, notFailing),
			want: status.InProgressStatus, reason: v1alpha1.ReasonWaitingForNetwork, ready: metav1.ConditionFalse,
		},
		"never reported": {
			node: node(""),
			want: status.InProgressStatus, reason: v1alpha1.ReasonSpecNotObserved, ready: metav1.ConditionFalse,
		},
		"refused: a pod holds the source VIP": {
			node: node("h2", alive, cond{v1alpha1.ConditionProgrammed, "False", v1alpha1.ReasonSourceVIPConflict, 0}, notFailing),
			want: status.FailedStatus, reason: v1alpha1.ReasonSourceVIPConflict, ready: metav1.ConditionFalse,
		},
		"network missing": {
			node: node("h2", alive, cond{v1alpha1.ConditionNetworkReady, "False", v1alpha1.ReasonNetworkNotFound, 0},
				cond{v1alpha1.ConditionProgrammed, "False", v1alpha1.ReasonNetworkNotFound, 0}, notFailing),
			want: status.FailedStatus, reason: v1alpha1.ReasonNetworkNotFound, ready: metav1.ConditionFalse,
		},
		"failed HNS calls": {
			node: node("h2", alive, cond{v1alpha1.ConditionProgrammed, "False", v1alpha1.ReasonSyncFailed, 0},
				cond{v1alpha1.ConditionDegraded, "True", v1alpha1.ReasonSyncFailed, 0}),
			want: status.FailedStatus, reason: v1alpha1.ReasonSyncFailed, ready: metav1.ConditionFalse,
		},
		"heartbeat lost": {
			node: node("h2", cond{v1alpha1.ConditionAgentAlive, "False", v1alpha1.ReasonHeartbeatLost, 0},
				cond{v1alpha1.ConditionProgrammed, "Unknown", v1alpha1.ReasonHeartbeatLost, 0}, notFailing),
			want: status.FailedStatus, reason: v1alpha1.ReasonHeartbeatLost, ready: metav1.ConditionUnknown,
		},
		"heartbeat lost while a new spec waits": {
			node: node("h1", cond{v1alpha1.ConditionAgentAlive, "False", v1alpha1.ReasonHeartbeatLost, 0}, synced, notFailing),
			want: status.FailedStatus, reason: v1alpha1.ReasonHeartbeatLost, ready: metav1.ConditionUnknown,
		},
		"sync loop stuck": {
			node: node("h2", cond{v1alpha1.ConditionAgentAlive, "False", v1alpha1.ReasonSyncLoopStuck, 0},
				cond{v1alpha1.ConditionProgrammed, "Unknown", v1alpha1.ReasonSyncLoopStuck, 0}, notFailing),
			want: status.FailedStatus, reason: v1alpha1.ReasonSyncLoopStuck, ready: metav1.ConditionUnknown,
		},
		"heartbeat back, the agent has not reported yet": {
			node: node("h2", alive, cond{v1alpha1.ConditionProgrammed, "Unknown", v1alpha1.ReasonHeartbeatLost, 0}, notFailing),
			want: status.InProgressStatus, reason: v1alpha1.ReasonHeartbeatLost, ready: metav1.ConditionFalse,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := tc.node
			Set(&w.Status, w, now)
			if res := kstatus(t, w); res.Status != tc.want {
				t.Errorf("kstatus = %s (%s), want %s", res.Status, res.Message, tc.want)
			}
			ready := meta.FindStatusCondition(w.Status.Conditions, v1alpha1.ConditionReady)
			if ready.Status != tc.ready || ready.Reason != tc.reason {
				t.Errorf("Ready = %s/%s, want %s/%s", ready.Status, ready.Reason, tc.ready, tc.reason)
			}
			trueCount := 0
			for _, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionReconciling, v1alpha1.ConditionStalled} {
				c := meta.FindStatusCondition(w.Status.Conditions, typ)
				if c.ObservedGeneration != w.Generation {
					t.Errorf("%s.observedGeneration = %d, want %d", typ, c.ObservedGeneration, w.Generation)
				}
				if c.Status == metav1.ConditionTrue {
					trueCount++
				}
			}
			if trueCount > 1 {
				t.Errorf("%d of Ready, Reconciling and Stalled are True: %+v", trueCount, w.Status.Conditions)
			}
		})
	}
}

// TestObservedGenerationBehind: kstatus reads a node whose status is of an older generation as in
// progress, whatever its conditions say, so the agent must write status.observedGeneration.
func TestObservedGenerationBehind(t *testing.T) {
	w := node("h2", alive, synced, notFailing)
	Set(&w.Status, w, now)
	w.Generation = 3
	if res := kstatus(t, w); res.Status != status.InProgressStatus {
		t.Errorf("kstatus = %s, want InProgress for a status of generation 2 on generation 3", res.Status)
	}
}

// kstatus is what kstatus reads from w, converted as tools read it: unstructured.
func kstatus(t *testing.T, w *v1alpha1.WindowsProxyNode) *status.Result {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w)
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
