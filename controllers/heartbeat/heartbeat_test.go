package heartbeat

import (
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

const grace = 40 * time.Second

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// lease is node's heartbeat Lease at resourceVersion rv, renewed at renew (by the agent's clock).
func lease(node, rv string, renew time.Time, stuck string) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "winproxy-system", Name: node, ResourceVersion: rv}}
	r := metav1.NewMicroTime(renew)
	l.Spec.RenewTime = &r
	if stuck != "" {
		l.Annotations = map[string]string{v1alpha1.SyncLoopStuckAnnotation: stuck}
	}
	return l
}

// TestJudge is every verdict the controller can reach about one node, from the Leases it saw.
func TestJudge(t *testing.T) {
	cases := map[string]struct {
		// seen are the Leases observed, each at t0 plus its offset; none when the Lease never
		// appeared.
		seen []observed
		// created is when the WindowsProxyNode was created, relative to t0 (the controller's start).
		created time.Duration
		// at is when the verdict is asked for, relative to t0.
		at time.Duration
		// want is the verdict: undecided, or alive or not with a reason; message words it must have.
		decided bool
		alive   bool
		reason  string
		words   []string
		// recheck is when the verdict would change without an event, relative to t0; 0 for never.
		recheck time.Duration
	}{
		"fresh renewal": {
			seen: []observed{{lease("n", "1", t0, ""), 0}, {lease("n", "2", t0.Add(10*time.Second), ""), 10 * time.Second}},
			at:   30 * time.Second, decided: true, alive: true, reason: v1alpha1.ReasonHeartbeatRenewed,
			words: []string{"winproxy-system/n"}, recheck: 50 * time.Second,
		},
		"a renewal exactly at the grace period is still alive": {
			seen: []observed{{lease("n", "1", t0, ""), 0}},
			at:   grace, decided: true, alive: true, reason: v1alpha1.ReasonHeartbeatRenewed, recheck: grace,
		},
		"silent past the grace period": {
			seen: []observed{{lease("n", "1", t0, ""), 0}},
			at:   grace + time.Second, decided: true, reason: v1alpha1.ReasonHeartbeatLost,
			words: []string{"no heartbeat since 2026-12-02T10:00:00Z", "grace period of 40s"},
		},
		"the agent's clock is an hour behind: judged by when the controller saw the renewal": {
			seen: []observed{{lease("n", "1", t0.Add(-time.Hour), ""), 30 * time.Second}},
			at:   time.Minute, decided: true, alive: true, reason: v1alpha1.ReasonHeartbeatRenewed, recheck: 70 * time.Second,
		},
		"an event without a new resourceVersion (a resync) is no renewal": {
			seen: []observed{{lease("n", "1", t0, ""), 0}, {lease("n", "1", t0, ""), 30 * time.Second}},
			at:   grace + time.Second, decided: true, reason: v1alpha1.ReasonHeartbeatLost,
		},
		"stuck: reported at once, with the agent's words": {
			seen: []observed{{lease("n", "1", t0, ""), 0}, {lease("n", "2", t0, "HNS has not answered and no sync has completed for 2m0s"), 5 * time.Second}},
			at:   6 * time.Second, decided: true, reason: v1alpha1.ReasonSyncLoopStuck,
			words: []string{"sync loop is stuck: HNS has not answered"},
		},
		"progress after stuck: alive again": {
			seen: []observed{{lease("n", "1", t0, "stuck"), 0}, {lease("n", "2", t0.Add(20*time.Second), ""), 20 * time.Second}},
			at:   21 * time.Second, decided: true, alive: true, reason: v1alpha1.ReasonHeartbeatRenewed, recheck: 60 * time.Second,
		},
		"no Lease yet, WindowsProxyNode new: wait for the grace period": {
			created: 10 * time.Second, at: 20 * time.Second, recheck: 50 * time.Second,
		},
		"no Lease within the grace period of the WindowsProxyNode": {
			created: 10 * time.Second, at: 51 * time.Second, decided: true, reason: v1alpha1.ReasonHeartbeatLost,
			words: []string{"Lease winproxy-system/n does not exist", "--heartbeat-namespace=winproxy-system"},
		},
		"no Lease, old WindowsProxyNode, controller just started: a grace period from the start": {
			created: -time.Hour, at: 30 * time.Second, recheck: grace,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tr := NewTracker("winproxy-system", grace, t0)
			for _, o := range tc.seen {
				tr.Observe(o.lease, t0.Add(o.at))
			}
			v := tr.Judge("n", t0.Add(tc.created), t0.Add(tc.at))
			if v.Decided != tc.decided || v.Alive != tc.alive || v.Reason != tc.reason {
				t.Fatalf("verdict = decided %v alive %v %s (%s), want decided %v alive %v %s", v.Decided, v.Alive, v.Reason, v.Message, tc.decided, tc.alive, tc.reason)
			}
			for _, w := range tc.words {
				if !strings.Contains(v.Message, w) {
					t.Errorf("message %q lacks %q", v.Message, w)
				}
			}
			var recheck time.Time
			if tc.recheck != 0 {
				recheck = t0.Add(tc.recheck)
			}
			if !v.RecheckAt.Equal(recheck) {
				t.Errorf("recheck at %v, want %v", v.RecheckAt, recheck)
			}
		})
	}
}

type observed struct {
	lease *coordinationv1.Lease
	at    time.Duration
}

// TestObserveSaysWhenToReconcile: a renewal of a live node costs no reconcile; the first Lease,
// a Lease of a node reported dead, and a change of the stuck word do.
func TestObserveSaysWhenToReconcile(t *testing.T) {
	tr := NewTracker("ns", grace, t0)
	steps := []struct {
		what    string
		lease   *coordinationv1.Lease
		reports func()
		want    bool
	}{
		{what: "first Lease", lease: lease("n", "1", t0, ""), want: true},
		{what: "renewal of a live node", lease: lease("n", "2", t0, ""), reports: func() { tr.Reported("n", "c", true) }, want: false},
		{what: "the same version again", lease: lease("n", "2", t0, ""), want: false},
		{what: "stuck", lease: lease("n", "3", t0, "stuck"), want: true},
		{what: "renewal of a node reported dead", lease: lease("n", "4", t0, ""), reports: func() { tr.Reported("n", "c", false) }, want: true},
	}
	for _, s := range steps {
		if s.reports != nil {
			s.reports()
		}
		if got := tr.Observe(s.lease, t0); got != s.want {
			t.Errorf("%s: Observe = %v, want %v", s.what, got, s.want)
		}
	}
}

// TestStale: the sweep hands over a node once its heartbeat is stale and not again once that is
// reported; a node without a WindowsProxyNode is handed over once, then left alone.
func TestStale(t *testing.T) {
	tr := NewTracker("ns", grace, t0)
	tr.Observe(lease("a", "1", t0, ""), t0)
	tr.Observe(lease("b", "1", t0, ""), t0.Add(30*time.Second))
	tr.Observe(lease("unselected", "1", t0, ""), t0)
	tr.Reported("a", "c", true)
	tr.Reported("b", "c", true)
	at := t0.Add(grace + time.Second)
	if got := strings.Join(sorted(tr.Stale(at)), ","); got != "a,unselected" {
		t.Fatalf("Stale = %s, want a,unselected", got)
	}
	tr.Reported("a", "c", false)
	tr.Unselected("unselected", at)
	if got := tr.Stale(at); len(got) != 0 {
		t.Errorf("Stale after reporting = %v, want none", got)
	}
	var ages []string
	tr.Ages(at, func(node, config string, age time.Duration) { ages = append(ages, node+"/"+config+"="+age.String()) })
	if got := strings.Join(sorted(ages), " "); got != "a/c=41s b/c=11s" {
		t.Errorf("ages = %s, want a/c=41s b/c=11s (none for the unselected node)", got)
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// TestApply: a dead agent's node says so, vouches for nothing and reads Failed; a write happens
// only when AgentAlive's status or reason changes.
func TestApply(t *testing.T) {
	wpn := &v1alpha1.WindowsProxyNode{ObjectMeta: metav1.ObjectMeta{Name: "n", Generation: 3}, Spec: v1alpha1.WindowsProxyNodeSpec{Hash: "h"}}
	st := v1alpha1.WindowsProxyNodeStatus{ObservedHash: "h", ObservedGeneration: 2, Conditions: []metav1.Condition{
		{Type: v1alpha1.ConditionProgrammed, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSynced, ObservedGeneration: 3},
	}}
	lost := Verdict{Decided: true, Reason: v1alpha1.ReasonHeartbeatLost, Message: "no heartbeat since then"}
	if !Apply(&st, wpn, lost, t0) {
		t.Fatal("Apply(lost) changed nothing")
	}
	want := map[string]metav1.ConditionStatus{
		v1alpha1.ConditionAgentAlive: metav1.ConditionFalse, v1alpha1.ConditionProgrammed: metav1.ConditionUnknown,
		v1alpha1.ConditionReady: metav1.ConditionUnknown, v1alpha1.ConditionStalled: metav1.ConditionTrue, v1alpha1.ConditionReconciling: metav1.ConditionFalse,
	}
	for typ, s := range want {
		if c := meta.FindStatusCondition(st.Conditions, typ); c == nil || c.Status != s || c.Reason != v1alpha1.ReasonHeartbeatLost {
			t.Errorf("%s = %+v, want %s HeartbeatLost", typ, c, s)
		}
	}
	if st.ObservedGeneration != 3 {
		t.Errorf("observedGeneration = %d, want 3: the controller observed that nobody acts on generation 3", st.ObservedGeneration)
	}
	if Apply(&st, wpn, Verdict{Decided: true, Reason: v1alpha1.ReasonHeartbeatLost, Message: "other words"}, t0.Add(time.Minute)) {
		t.Error("Apply of the same verdict in other words asked for a write")
	}
	if !Apply(&st, wpn, Verdict{Decided: true, Alive: true, Reason: v1alpha1.ReasonHeartbeatRenewed}, t0.Add(2*time.Minute)) {
		t.Fatal("Apply(alive) changed nothing")
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReconciling); c.Status != metav1.ConditionTrue {
		t.Errorf("Reconciling = %+v once the heartbeat is back: want True until the agent reports", c)
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgrammed); c.Status != metav1.ConditionUnknown {
		t.Errorf("Programmed = %+v: only the agent may vouch for it again", c)
	}
}
