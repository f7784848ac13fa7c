package configevents

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
)

func fail(node, reason string) winproxyv1alpha1.NodeProblem {
	return winproxyv1alpha1.NodeProblem{Name: node, Reason: reason, Message: "m"}
}

// summary is an event as "Type/Reason/Node".
func summary(es []Event) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Type+"/"+e.Reason+"/"+e.Node)
	}
	return out
}

func TestNodeFailuresAreRateLimited(t *testing.T) {
	gate, vip := winproxyv1alpha1.ReasonFeatureGateDisabled, winproxyv1alpha1.ReasonSourceVIPUnusable
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var f NodeFailures
	steps := []struct {
		name     string
		at       time.Duration
		listed   []winproxyv1alpha1.NodeProblem
		problems []winproxyv1alpha1.NodeProblem
		want     []string
	}{
		{name: "after a restart, what the status lists is not reported again", listed: []winproxyv1alpha1.NodeProblem{fail("a", gate)},
			problems: []winproxyv1alpha1.NodeProblem{fail("a", gate), fail("b", gate)}, want: []string{"Warning/" + gate + "/b"}},
		{name: "still failing: nothing new", at: time.Minute, problems: []winproxyv1alpha1.NodeProblem{fail("a", gate), fail("b", gate)}},
		{name: "b recovers", at: 2 * time.Minute, problems: []winproxyv1alpha1.NodeProblem{fail("a", gate)}},
		{name: "b fails again within the interval: not reported", at: 3 * time.Minute, problems: []winproxyv1alpha1.NodeProblem{fail("a", gate), fail("b", gate)}},
		{name: "b fails for another reason: reported", at: 4 * time.Minute, problems: []winproxyv1alpha1.NodeProblem{fail("a", gate), fail("b", vip)}, want: []string{"Warning/" + vip + "/b"}},
		{name: "b flaps back", at: 5 * time.Minute, problems: []winproxyv1alpha1.NodeProblem{fail("a", gate), fail("b", gate)}},
		{name: "b recovers again", at: 6 * time.Minute, problems: []winproxyv1alpha1.NodeProblem{fail("a", gate)}},
		{name: "an interval after the last report, b failing is reported again", at: 11 * time.Minute, problems: []winproxyv1alpha1.NodeProblem{fail("a", gate), fail("b", gate)}, want: []string{"Warning/" + gate + "/b"}},
	}
	for _, s := range steps {
		if got := summary(f.Events("c", s.listed, s.problems, t0.Add(s.at))); !slices.Equal(got, s.want) {
			t.Errorf("%s: reported %v, want %v", s.name, got, s.want)
		}
	}
	f.Forget("c")
	if got := f.Events("c", nil, []winproxyv1alpha1.NodeProblem{fail("a", gate)}, t0.Add(12*time.Minute)); len(got) != 1 {
		t.Errorf("a config created again under the same name: reported %v, want a", got)
	}
}

func TestSilentNodesAreReportedRestored(t *testing.T) {
	lost, stuck, degraded := winproxyv1alpha1.ReasonHeartbeatLost, winproxyv1alpha1.ReasonSyncLoopStuck, winproxyv1alpha1.ReasonNodeDegraded
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var f NodeFailures
	steps := []struct {
		name     string
		listed   []winproxyv1alpha1.NodeProblem
		problems []winproxyv1alpha1.NodeProblem
		want     []string
	}{
		{name: "after a restart, a listed silent node that renews again is restored",
			listed: []winproxyv1alpha1.NodeProblem{fail("a", lost), fail("b", degraded)}, problems: []winproxyv1alpha1.NodeProblem{fail("b", degraded)},
			want: []string{"Normal/" + HeartbeatRestored + "/a"}},
		{name: "b goes silent, c is stuck", problems: []winproxyv1alpha1.NodeProblem{fail("b", lost), fail("c", stuck)},
			want: []string{"Warning/" + lost + "/b", "Warning/" + stuck + "/c"}},
		{name: "b renews again but fails for another reason; c renews and works", problems: []winproxyv1alpha1.NodeProblem{fail("b", degraded)},
			want: []string{"Normal/" + HeartbeatRestored + "/b", "Normal/" + HeartbeatRestored + "/c", "Warning/" + degraded + "/b"}},
		{name: "a failing node that was never silent is not restored", problems: nil},
	}
	for i, s := range steps {
		got := f.Events("c", s.listed, s.problems, t0.Add(time.Duration(i)*time.Minute))
		if diff := cmp.Diff(s.want, summary(got)); diff != "" {
			t.Errorf("%s (-want,+got):\n%s", s.name, diff)
		}
		for _, e := range got {
			if !strings.HasPrefix(e.Note, "Node "+e.Node+": ") {
				t.Errorf("%s: the note %q does not name node %s first", s.name, e.Note, e.Node)
			}
		}
	}
}

// cond is a condition of a config's status.
func cond(typ string, st metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: reason + " message"}
}

func TestTransitions(t *testing.T) {
	const (
		progressing, rolledBack, conflicted, stalled = winproxyv1alpha1.ConditionProgressing, winproxyv1alpha1.ConditionRolledBack,
			winproxyv1alpha1.ConditionConflicted, winproxyv1alpha1.ConditionStalled
		yes, no = metav1.ConditionTrue, metav1.ConditionFalse
	)
	rollingOut := cond(progressing, yes, winproxyv1alpha1.ReasonRollingOut)
	complete := cond(progressing, no, winproxyv1alpha1.ReasonRolloutComplete)
	withFailures := cond(progressing, no, winproxyv1alpha1.ReasonRolloutCompleteWithFailures)
	stalledRollout := cond(progressing, no, winproxyv1alpha1.ReasonRolloutStalled)
	rollingBack := cond(rolledBack, yes, winproxyv1alpha1.ReasonRollingBack)
	cases := map[string]struct {
		before, after []metav1.Condition
		// want is each event as "Type/Reason/Action: Note".
		want []string
	}{
		"nothing changed": {before: []metav1.Condition{rollingOut}, after: []metav1.Condition{rollingOut}},
		"a rollout starts": {before: []metav1.Condition{complete}, after: []metav1.Condition{rollingOut},
			want: []string{"Normal/RolloutStarted/Rollout: RollingOut message"}},
		"a rollout completes": {before: []metav1.Condition{rollingOut}, after: []metav1.Condition{complete},
			want: []string{"Normal/RolloutCompleted/Rollout: RolloutComplete message"}},
		"the first status of a config is no completed rollout": {after: []metav1.Condition{complete}},
		"a stalled rollout completes with failures": {before: []metav1.Condition{stalledRollout}, after: []metav1.Condition{withFailures},
			want: []string{"Warning/RolloutCompletedWithFailures/Rollout: RolloutCompleteWithFailures message"}},
		"a rollout stalls": {before: []metav1.Condition{rollingOut}, after: []metav1.Condition{stalledRollout},
			want: []string{"Warning/RolloutStalled/Rollout: RolloutStalled message"}},
		"a rollback starts": {before: []metav1.Condition{cond(rolledBack, no, winproxyv1alpha1.ReasonAsExpected)}, after: []metav1.Condition{rollingBack},
			want: []string{"Warning/RolledBack/Rollout: RollingBack message"}},
		"a rollback completes": {before: []metav1.Condition{rollingBack}, after: []metav1.Condition{cond(rolledBack, yes, winproxyv1alpha1.ReasonRollbackComplete)},
			want: []string{"Normal/RollbackCompleted/Rollout: RollbackComplete message"}},
		"a conflict appears": {after: []metav1.Condition{cond(conflicted, yes, winproxyv1alpha1.ReasonNodesClaimedByOlderConfig)},
			want: []string{"Warning/Conflict/Select: NodesClaimedByOlderConfig message"}},
		"a stall no other event reports": {before: []metav1.Condition{cond(stalled, no, winproxyv1alpha1.ReasonAsExpected)},
			after: []metav1.Condition{cond(stalled, yes, winproxyv1alpha1.ReasonInvalidNodeSelector)},
			want:  []string{"Warning/InvalidNodeSelector/Select: InvalidNodeSelector message"}},
		"a stall its own event reports": {after: []metav1.Condition{cond(stalled, yes, winproxyv1alpha1.ReasonRolloutStalled)}},
		"the same stall again":          {before: []metav1.Condition{cond(stalled, yes, winproxyv1alpha1.ReasonAllNodesClaimed)}, after: []metav1.Condition{cond(stalled, yes, winproxyv1alpha1.ReasonAllNodesClaimed)}},
	}
	for name, tc := range cases {
		var got []string
		for _, e := range Transitions(tc.before, tc.after) {
			got = append(got, e.Type+"/"+e.Reason+"/"+e.Action+": "+e.Note)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want,+got):\n%s", name, diff)
		}
	}
}

func TestNotesAreBounded(t *testing.T) {
	long := strings.Repeat("ü", MaxNote)
	es := Transitions(nil, []metav1.Condition{{Type: winproxyv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: winproxyv1alpha1.ReasonRollingOut, Message: long}})
	var f NodeFailures
	es = append(es, f.Events("c", nil, []winproxyv1alpha1.NodeProblem{{Name: "n", Reason: winproxyv1alpha1.ReasonNodeDegraded, Message: long}}, time.Now())...)
	if len(es) != 2 {
		t.Fatalf("events %v, want a rollout start and a failing node", summary(es))
	}
	for _, e := range es {
		if len(e.Note) > MaxNote || e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
			t.Errorf("event %s: type %q and a note of %d bytes (at most %d)", e.Reason, e.Type, len(e.Note), MaxNote)
		}
	}
}
