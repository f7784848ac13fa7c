package configstatus

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatusv1 "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/rollout"
	"github.com/winproxy/winproxy/controllers/selection"
	"github.com/winproxy/winproxy/internal/conditions"
	"github.com/winproxy/winproxy/internal/resolve"
)

// t0 is the time the statuses are computed at.
var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func programmedNode(name string) Node {
	return Node{Name: name, Desired: "h2", Current: "h2", Programmed: true}
}

// summary is "Status/Reason" by condition type.
func summary(conds []metav1.Condition) map[string]string {
	out := map[string]string{}
	for _, c := range conds {
		out[c.Type] = string(c.Status) + "/" + c.Reason
	}
	return out
}

// conds is the conditions of a config that is not rolled back (RolledBack=False/AsExpected).
func conds(accepted, ready, progressing, degraded, downgraded, conflicted string) map[string]string {
	return map[string]string{
		winproxyv1alpha1.ConditionAccepted:            accepted,
		winproxyv1alpha1.ConditionReady:               ready,
		winproxyv1alpha1.ConditionProgressing:         progressing,
		winproxyv1alpha1.ConditionDegraded:            degraded,
		winproxyv1alpha1.ConditionDualStackDowngraded: downgraded,
		winproxyv1alpha1.ConditionConflicted:          conflicted,
		winproxyv1alpha1.ConditionRolledBack:          "False/AsExpected",
	}
}

// rolledBack sets the RolledBack condition of c.
func rolledBack(c map[string]string, v string) map[string]string {
	c[winproxyv1alpha1.ConditionRolledBack] = v
	return c
}

// kstatus adds the Reconciling and Stalled conditions to c.
func kstatus(c map[string]string, reconciling, stalled string) map[string]string {
	c[winproxyv1alpha1.ConditionReconciling] = reconciling
	c[winproxyv1alpha1.ConditionStalled] = stalled
	return c
}

// computeKstatus is what kstatus (and so Flux, Argo CD and helm --wait) reads from a config with
// status st whose generation was observed.
func computeKstatus(t *testing.T, st winproxyv1alpha1.WindowsProxyConfigStatus) kstatusv1.Status {
	t.Helper()
	cfg := &winproxyv1alpha1.WindowsProxyConfig{ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 3}, Status: st}
	cfg.Status.ObservedGeneration = 3
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := kstatusv1.Compute(&unstructured.Unstructured{Object: u})
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

func TestComputeStatus(t *testing.T) {
	gateErr := &resolve.Error{Reason: winproxyv1alpha1.ReasonFeatureGateLocked, Message: "cannot set feature gate WinDSR to false, feature is locked to true"}
	vipErr := &resolve.Error{Reason: winproxyv1alpha1.ReasonSourceVIPUnavailable, Message: "source-vip flag not set"}
	tests := []struct {
		name        string
		in          Inputs
		wantNodes   winproxyv1alpha1.NodeCounts
		wantConds   map[string]string
		wantFailing []winproxyv1alpha1.NodeProblem
		wantMsg     map[string]string // substrings of condition messages
		wantKstatus kstatusv1.Status
	}{
		{
			name: "no node selected is ready",
			wantConds: kstatus(conds("True/NoNodesSelected", "True/NoNodesSelected", "False/RolloutComplete", "False/AsExpected", "False/AsExpected", "False/AsExpected"),
				"False/NoNodesSelected", "False/AsExpected"),
			wantKstatus: kstatusv1.CurrentStatus,
		},
		{
			name:      "all programmed",
			in:        Inputs{Nodes: []Node{programmedNode("a"), programmedNode("b")}},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Updated: 2, Programmed: 2},
			wantConds: kstatus(conds("True/Valid", "True/AllNodesProgrammed", "False/RolloutComplete", "False/AsExpected", "False/AsExpected", "False/AsExpected"),
				"False/AllNodesProgrammed", "False/AsExpected"),
			wantKstatus: kstatusv1.CurrentStatus,
		},
		{
			name: "rolling out",
			in: Inputs{
				Nodes:          []Node{programmedNode("a"), {Name: "b", Desired: "h2", Current: "h2"}, {Name: "c", Desired: "h2", Current: "h1", Programmed: true}},
				Plan:           rollout.Plan{Pending: []string{"c"}, InFlight: 1},
				MaxUnavailable: 1,
			},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 3, Updated: 2, Programmed: 1},
			wantConds: kstatus(conds("True/Valid", "False/NodesNotProgrammed", "True/RollingOut", "False/AsExpected", "False/AsExpected", "False/AsExpected"),
				"True/RollingOut", "False/AsExpected"),
			wantKstatus: kstatusv1.InProgressStatus,
			wantMsg: map[string]string{
				winproxyv1alpha1.ConditionReady:       "1 of 3 nodes programmed the current config; waiting for b, c",
				winproxyv1alpha1.ConditionProgressing: "Rolling out: 2 of 3 nodes updated, 1 in progress (maxUnavailable 1)",
			},
		},
		{
			name: "stalled by a missed deadline",
			in: Inputs{
				Nodes:   []Node{{Name: "a", Desired: "h2", Current: "h2"}, {Name: "b", Desired: "h2", Current: "h1", Programmed: true}},
				Plan:    rollout.Plan{Pending: []string{"b"}, InFlight: 1, Stalls: []rollout.Stall{{Node: "a", DeadlineExceeded: true}}},
				Rollout: winproxyv1alpha1.RolloutSpec{ProgressDeadlineSeconds: 60},
			},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Updated: 1, Degraded: 1},
			wantConds: kstatus(conds("True/Valid", "False/NodesNotProgrammed", "False/RolloutStalled", "True/NodesDegraded", "False/AsExpected", "False/AsExpected"),
				"False/RolloutStalled", "True/RolloutStalled"),
			wantKstatus: kstatusv1.FailedStatus,
			wantFailing: []winproxyv1alpha1.NodeProblem{{Name: "a", Reason: winproxyv1alpha1.ReasonProgressDeadlineExceeded,
				Message: "the node did not report Programmed within 60s of receiving config h2; check its winproxy-agent"}},
			wantMsg: map[string]string{winproxyv1alpha1.ConditionProgressing: "Rollout stalled: node a did not report Programmed within 60s; 1 nodes wait"},
		},
		{
			name: "stalled by a degraded node",
			in: Inputs{
				Nodes: []Node{{Name: "a", Desired: "h2", Current: "h2", Degraded: true, DegradedReason: "SyncFailed", DegradedMessage: "3 load balancers failed"}},
				Plan:  rollout.Plan{InFlight: 1, Stalls: []rollout.Stall{{Node: "a"}}},
			},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 1, Updated: 1, Degraded: 1},
			wantConds: kstatus(conds("True/Valid", "False/NodesNotProgrammed", "False/RolloutStalled", "True/NodesDegraded", "False/AsExpected", "False/AsExpected"),
				"False/RolloutStalled", "True/RolloutStalled"),
			wantKstatus: kstatusv1.FailedStatus,
			wantFailing: []winproxyv1alpha1.NodeProblem{{Name: "a", Reason: winproxyv1alpha1.ReasonNodeDegraded, Message: "the agent reports Degraded (SyncFailed): 3 load balancers failed"}},
			wantMsg:     map[string]string{winproxyv1alpha1.ConditionDegraded: "1 of 1 nodes have a problem: a (NodeDegraded)"},
		},
		{
			name: "an agent lost its heartbeat after programming",
			in: Inputs{
				Nodes: []Node{{Name: "a", Desired: "h1", Current: "h1", WaitingReason: "HeartbeatLost", Silent: true, SilentReason: "HeartbeatLost", SilentMessage: "no heartbeat since 2026-12-02T10:00:00Z"},
					{Name: "b", Desired: "h1", Current: "h1", Programmed: true}},
			},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Updated: 2, Programmed: 1, Degraded: 1, Unreachable: 1},
			wantConds: kstatus(conds("True/Valid", "False/NodesNotProgrammed", "False/RolloutCompleteWithFailures", "True/NodesDegraded", "False/AsExpected", "False/AsExpected"),
				"False/NodesFailing", "True/NodesFailing"),
			wantKstatus: kstatusv1.FailedStatus,
			wantFailing: []winproxyv1alpha1.NodeProblem{{Name: "a", Reason: winproxyv1alpha1.ReasonHeartbeatLost, Message: "no heartbeat since 2026-12-02T10:00:00Z"}},
			wantMsg: map[string]string{
				winproxyv1alpha1.ConditionReady:    "1 of 2 nodes programmed the current config; waiting for a (HeartbeatLost)",
				winproxyv1alpha1.ConditionDegraded: "1 of 2 nodes have a problem: a (HeartbeatLost)",
			},
		},
		{
			name:      "gates invalid on every node: not accepted",
			in:        Inputs{Nodes: []Node{{Name: "a", Err: gateErr, SpecErr: gateErr, Current: "h0"}, {Name: "b", Err: gateErr, SpecErr: gateErr}}},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Degraded: 2},
			wantConds: kstatus(conds("False/InvalidFeatureGates", "False/NodesNotProgrammed", "False/RolloutCompleteWithFailures", "True/NodesDegraded", "False/AsExpected", "False/AsExpected"),
				"False/InvalidFeatureGates", "True/InvalidFeatureGates"),
			wantKstatus: kstatusv1.FailedStatus,
			wantFailing: []winproxyv1alpha1.NodeProblem{
				{Name: "a", Reason: gateErr.Reason, Message: gateErr.Message},
				{Name: "b", Reason: gateErr.Reason, Message: gateErr.Message},
			},
			wantMsg: map[string]string{winproxyv1alpha1.ConditionAccepted: "The config cannot be used on any of the 2 selected nodes; they keep their last good config. a: cannot set feature gate WinDSR"},
		},
		{
			name:      "every node fails, not only on gates",
			in:        Inputs{Nodes: []Node{{Name: "a", Err: gateErr, SpecErr: gateErr}, {Name: "b", Err: vipErr, SpecErr: vipErr}}},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Degraded: 2},
			wantConds: kstatus(conds("False/NodesUnresolvable", "False/NodesNotProgrammed", "False/RolloutCompleteWithFailures", "True/NodesDegraded", "False/AsExpected", "False/AsExpected"),
				"False/NodesUnresolvable", "True/NodesUnresolvable"),
			wantKstatus: kstatusv1.FailedStatus,
			wantFailing: []winproxyv1alpha1.NodeProblem{
				{Name: "a", Reason: gateErr.Reason, Message: gateErr.Message},
				{Name: "b", Reason: vipErr.Reason, Message: vipErr.Message},
			},
		},
		{
			name:      "gates invalid on some nodes: accepted, degraded",
			in:        Inputs{Nodes: []Node{programmedNode("a"), {Name: "b", Err: gateErr, SpecErr: gateErr}}},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Updated: 1, Programmed: 1, Degraded: 1},
			wantConds: kstatus(conds("True/PartiallyResolved", "False/NodesNotProgrammed", "False/RolloutCompleteWithFailures", "True/NodesDegraded", "False/AsExpected", "False/AsExpected"),
				"False/NodesFailing", "True/NodesFailing"),
			wantKstatus: kstatusv1.FailedStatus,
			wantFailing: []winproxyv1alpha1.NodeProblem{{Name: "b", Reason: gateErr.Reason, Message: gateErr.Message}},
			wantMsg:     map[string]string{winproxyv1alpha1.ConditionAccepted: "The config cannot be used on 1 of 2 nodes"},
		},
		{
			name: "paused",
			in: Inputs{
				Nodes:   []Node{programmedNode("a"), {Name: "b", Desired: "h2", Current: "h1", Programmed: true}},
				Plan:    rollout.Plan{Pending: []string{"b"}},
				Rollout: winproxyv1alpha1.RolloutSpec{Paused: true},
			},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Updated: 1, Programmed: 1},
			wantConds: kstatus(conds("True/Valid", "False/NodesNotProgrammed", "False/RolloutPaused", "False/AsExpected", "False/AsExpected", "False/AsExpected"),
				"True/RolloutPaused", "False/AsExpected"),
			wantKstatus: kstatusv1.InProgressStatus,
		},
		{
			name: "downgraded and conflicted",
			in: Inputs{
				Nodes:     []Node{func() Node { n := programmedNode("a"); n.Downgraded = true; return n }()},
				Conflicts: []selection.Conflict{{Node: "x", Owner: "older"}},
			},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 1, Updated: 1, Programmed: 1, DualStackDowngraded: 1},
			wantConds: kstatus(conds("True/Valid", "True/AllNodesProgrammed", "False/RolloutComplete", "False/AsExpected", "True/NodesDowngraded", "True/NodesClaimedByOlderConfig"),
				"False/AllNodesProgrammed", "False/AsExpected"),
			wantKstatus: kstatusv1.CurrentStatus,
			wantMsg: map[string]string{
				winproxyv1alpha1.ConditionConflicted:          "1 selected nodes belong to older configs and are not managed by this one: x (owned by older)",
				winproxyv1alpha1.ConditionDualStackDowngraded: "1 of 1 nodes proxy IPv4 only: a",
			},
		},
		{
			name: "invalid selector: the held nodes are kept as they are",
			in: Inputs{
				SelectorErr: errors.New(`"Bogus" is not a valid label selector operator`),
				Nodes:       []Node{programmedNode("a"), {Name: "b", Desired: "h2", Current: "h1", Programmed: true}},
			},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Updated: 1, Programmed: 1},
			wantConds: kstatus(conds("False/InvalidNodeSelector", "False/InvalidNodeSelector", "False/InvalidNodeSelector", "False/AsExpected", "False/AsExpected", "False/AsExpected"),
				"False/InvalidNodeSelector", "True/InvalidNodeSelector"),
			wantKstatus: kstatusv1.FailedStatus,
			wantMsg: map[string]string{
				winproxyv1alpha1.ConditionAccepted:    "the 2 nodes the config holds keep their current config and no other node is selected until it is fixed",
				winproxyv1alpha1.ConditionProgressing: "no node is changed until it is fixed",
			},
		},
		{
			name: "every selected node belongs to older configs: not ready, stalled",
			in:   Inputs{Conflicts: []selection.Conflict{{Node: "x", Owner: "older"}, {Node: "y", Owner: "oldest"}, {Node: "z", Owner: "older"}}},
			wantConds: kstatus(conds("True/AllNodesClaimed", "False/AllNodesClaimed", "False/RolloutComplete", "False/AsExpected", "False/AsExpected", "True/NodesClaimedByOlderConfig"),
				"False/AllNodesClaimed", "True/AllNodesClaimed"),
			wantKstatus: kstatusv1.FailedStatus,
			wantMsg: map[string]string{
				winproxyv1alpha1.ConditionReady:   "All 3 Windows nodes spec.nodeSelector matches belong to older configs, so this config manages none: older (2), oldest (1)",
				winproxyv1alpha1.ConditionStalled: "narrow spec.nodeSelector, delete the older config, or delete this one",
			},
		},
		{
			name:      "a node lapsed after the rollout: waiting, not stalled",
			in:        Inputs{Nodes: []Node{programmedNode("a"), {Name: "b", Desired: "h2", Current: "h2", WaitingReason: "NetworkNotFound"}}},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Updated: 2, Programmed: 1},
			wantConds: kstatus(conds("True/Valid", "False/NodesNotProgrammed", "False/RolloutComplete", "False/AsExpected", "False/AsExpected", "False/AsExpected"),
				"True/NodesNotProgrammed", "False/AsExpected"),
			wantKstatus: kstatusv1.InProgressStatus,
			wantMsg:     map[string]string{winproxyv1alpha1.ConditionReady: "1 of 2 nodes programmed the current config; waiting for b (NetworkNotFound)"},
		},
		{
			name:      "a node programmed and degraded is not ready",
			in:        Inputs{Nodes: []Node{programmedNode("a"), func() Node { n := programmedNode("b"); n.Degraded = true; return n }()}},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Updated: 2, Programmed: 2, Degraded: 1},
			wantConds: kstatus(conds("True/Valid", "False/NodesNotProgrammed", "False/RolloutCompleteWithFailures", "True/NodesDegraded", "False/AsExpected", "False/AsExpected"),
				"False/NodesFailing", "True/NodesFailing"),
			wantKstatus: kstatusv1.FailedStatus,
			wantFailing: []winproxyv1alpha1.NodeProblem{{Name: "b", Reason: winproxyv1alpha1.ReasonNodeDegraded, Message: "the agent reports Degraded"}},
			wantMsg:     map[string]string{winproxyv1alpha1.ConditionReady: "All 2 nodes programmed the current config, but 1 report a problem: b (NodeDegraded)"},
		},
		{
			name: "rolling back: not ready, stalled, progressing",
			in: Inputs{
				// The nodes should run h1, the last good config: a does again, b still runs h2.
				Nodes:          []Node{{Name: "a", Desired: "h1", Current: "h1", Programmed: true}, {Name: "b", Desired: "h1", Current: "h2", Programmed: true}},
				Plan:           rollout.Plan{Update: []string{"b"}, InFlight: 1},
				MaxUnavailable: 1,
				LastGood:       &winproxyv1alpha1.LastGoodConfig{Generation: 2},
				Rollback:       failedGeneration3,
			},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Updated: 1, Programmed: 1},
			wantConds: kstatus(rolledBack(conds("True/Valid", "False/RolledBack", "True/RollingBack", "False/AsExpected", "False/AsExpected", "False/AsExpected"), "True/RollingBack"),
				"False/RolledBack", "True/RolledBack"),
			wantKstatus: kstatusv1.FailedStatus,
			wantMsg: map[string]string{
				winproxyv1alpha1.ConditionReady:       "Generation 3 failed on c (NodeDegraded) and was rolled back: 1 of 2 nodes run generation 2 (status.lastGood)",
				winproxyv1alpha1.ConditionProgressing: "Rolling back to generation 2: 1 of 2 nodes back, 1 in progress (maxUnavailable 1)",
				winproxyv1alpha1.ConditionRolledBack:  "Generation 3 failed on 1 nodes: c (NodeDegraded); see status.rollback. Every node that got it is moved back to generation 2, at most maxUnavailable at a time (1 of 2 run it)",
				winproxyv1alpha1.ConditionStalled:     "set spec.rollout.autoRollback to false to roll it out again as it is",
			},
		},
		{
			name: "rolled back: every node runs the last good config, still not ready",
			in: Inputs{
				Nodes:    []Node{{Name: "a", Desired: "h1", Current: "h1", Programmed: true}, {Name: "b", Desired: "h1", Current: "h1", Programmed: true}},
				LastGood: &winproxyv1alpha1.LastGoodConfig{Generation: 2},
				Rollback: failedGeneration3,
			},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Updated: 2, Programmed: 2},
			wantConds: kstatus(rolledBack(conds("True/Valid", "False/RolledBack", "False/RollbackComplete", "False/AsExpected", "False/AsExpected", "False/AsExpected"), "True/RollbackComplete"),
				"False/RolledBack", "True/RolledBack"),
			wantKstatus: kstatusv1.FailedStatus,
			wantMsg: map[string]string{
				winproxyv1alpha1.ConditionProgressing: "Every node that can use it runs generation 2 again (2 of 2)",
				winproxyv1alpha1.ConditionRolledBack:  "Every node that got it was moved back to generation 2, the last config every node programmed",
			},
		},
		{
			name: "a paused rollback",
			in: Inputs{
				Nodes:    []Node{{Name: "a", Desired: "h1", Current: "h1", Programmed: true}, {Name: "b", Desired: "h1", Current: "h2", Programmed: true}},
				Plan:     rollout.Plan{Pending: []string{"b"}},
				Rollout:  winproxyv1alpha1.RolloutSpec{Paused: true},
				LastGood: &winproxyv1alpha1.LastGoodConfig{Generation: 2},
				Rollback: failedGeneration3,
			},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Updated: 1, Programmed: 1},
			wantConds: kstatus(rolledBack(conds("True/Valid", "False/RolledBack", "False/RolloutPaused", "False/AsExpected", "False/AsExpected", "False/AsExpected"), "True/RollingBack"),
				"False/RolledBack", "True/RolledBack"),
			wantKstatus: kstatusv1.FailedStatus,
			wantMsg:     map[string]string{winproxyv1alpha1.ConditionProgressing: "Rollback paused with 1 of 2 nodes back on generation 2"},
		},
		{
			name: "a stalled rollback",
			in: Inputs{
				Nodes:    []Node{{Name: "a", Desired: "h1", Current: "h1", Degraded: true}, {Name: "b", Desired: "h1", Current: "h2", Programmed: true}},
				Plan:     rollout.Plan{Pending: []string{"b"}, InFlight: 1, Stalls: []rollout.Stall{{Node: "a"}}},
				LastGood: &winproxyv1alpha1.LastGoodConfig{Generation: 2},
				Rollback: failedGeneration3,
			},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Updated: 1, Degraded: 1},
			wantConds: kstatus(rolledBack(conds("True/Valid", "False/RolledBack", "False/RolloutStalled", "True/NodesDegraded", "False/AsExpected", "False/AsExpected"), "True/RollingBack"),
				"False/RolledBack", "True/RolledBack"),
			wantKstatus: kstatusv1.FailedStatus,
			wantFailing: []winproxyv1alpha1.NodeProblem{{Name: "a", Reason: winproxyv1alpha1.ReasonNodeDegraded, Message: "the agent reports Degraded"}},
			wantMsg:     map[string]string{winproxyv1alpha1.ConditionProgressing: "Rollback stalled: node a reported Degraded for the config of generation 2; 1 nodes wait"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Generation = 3
			got := Compute(&winproxyv1alpha1.WindowsProxyConfigStatus{}, &tt.in, t0)
			if diff := cmp.Diff(tt.wantNodes, got.Nodes); diff != "" {
				t.Errorf("nodes (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantConds, summary(got.Conditions)); diff != "" {
				t.Errorf("conditions (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantFailing, got.FailingNodes, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("failingNodes (-want,+got):\n%s", diff)
			}
			for typ, sub := range tt.wantMsg {
				if c := meta.FindStatusCondition(got.Conditions, typ); c == nil || !strings.Contains(c.Message, sub) {
					t.Errorf("%s message = %q, want it to contain %q", typ, c.Message, sub)
				}
			}
			for _, c := range got.Conditions {
				if c.ObservedGeneration != 3 {
					t.Errorf("%s observedGeneration = %d, want 3", c.Type, c.ObservedGeneration)
				}
			}
			if k := computeKstatus(t, got); k != tt.wantKstatus {
				t.Errorf("kstatus = %s, want %s", k, tt.wantKstatus)
			}
			var trueOnes []string
			for _, typ := range []string{winproxyv1alpha1.ConditionReady, winproxyv1alpha1.ConditionReconciling, winproxyv1alpha1.ConditionStalled} {
				if meta.IsStatusConditionTrue(got.Conditions, typ) {
					trueOnes = append(trueOnes, typ)
				}
			}
			if len(trueOnes) != 1 {
				t.Errorf("Ready, Reconciling and Stalled: %v are True, want exactly one", trueOnes)
			}
		})
	}
}

func TestComputeStatusBoundsAndTransitions(t *testing.T) {
	in := Inputs{Generation: 1}
	for i := range 25 {
		name := string(rune('a'+i)) + "-node"
		err := &resolve.Error{Reason: winproxyv1alpha1.ReasonUnknownFeatureGate, Message: "unrecognized feature gate: X"}
		in.Nodes = append(in.Nodes, Node{Name: name, Err: err, SpecErr: err})
		in.Conflicts = append(in.Conflicts, selection.Conflict{Node: "other-" + name, Owner: "old"})
	}
	first := Compute(&winproxyv1alpha1.WindowsProxyConfigStatus{}, &in, t0)
	if len(first.FailingNodes) != MaxListedNodes || len(first.ConflictingNodes) != MaxListedNodes {
		t.Errorf("lists not bounded: %d failing, %d conflicting", len(first.FailingNodes), len(first.ConflictingNodes))
	}
	if c := meta.FindStatusCondition(first.Conditions, winproxyv1alpha1.ConditionDegraded); !strings.Contains(c.Message, "and 20 more") {
		t.Errorf("Degraded message does not count the rest: %q", c.Message)
	}

	// Same status later: transition times are kept and nothing changes.
	again := Compute(&first, &in, t0.Add(time.Hour))
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("recomputing an unchanged status changed it (-first,+again):\n%s", diff)
	}
	// A flip moves the transition time.
	in.Nodes, in.Conflicts = nil, nil
	flipped := Compute(&first, &in, t0.Add(time.Hour))
	if c := meta.FindStatusCondition(flipped.Conditions, winproxyv1alpha1.ConditionReady); !c.LastTransitionTime.Time.Equal(t0.Add(time.Hour)) {
		t.Errorf("Ready flipped but kept transition time %v", c.LastTransitionTime)
	}
}

// TestComputeStatusBoundsNodeData feeds node data of any size (a 40 KB annotation quoted in a
// resolution error, an agent's long message) and checks that every field stays within the CRD's
// bounds, so that one node never keeps the config's status from being written.
func TestComputeStatusBoundsNodeData(t *testing.T) {
	huge := strings.Repeat("é", 30000) // 60 KB, two bytes a rune
	in := Inputs{Generation: 1, Rollout: winproxyv1alpha1.RolloutSpec{ProgressDeadlineSeconds: 60}}
	for i := range 30 {
		name := fmt.Sprintf("node-%02d-%s", i, strings.Repeat("n", 240))
		switch i % 3 {
		case 0:
			err := &resolve.Error{Reason: winproxyv1alpha1.ReasonSourceVIPUnavailable, Message: huge}
			in.Nodes = append(in.Nodes, Node{Name: name, Err: err, SpecErr: err})
		case 1:
			in.Nodes = append(in.Nodes, Node{Name: name, Desired: "h", Current: "h", Degraded: true, DegradedReason: huge, DegradedMessage: huge})
		default:
			in.Nodes = append(in.Nodes, programmedNode(name))
		}
		in.Conflicts = append(in.Conflicts, selection.Conflict{Node: "other-" + name, Owner: huge})
	}
	st := Compute(&winproxyv1alpha1.WindowsProxyConfigStatus{}, &in, t0)
	for _, c := range st.Conditions {
		if len(c.Message) > conditions.MaxMessage || !utf8.ValidString(c.Message) {
			t.Errorf("%s message: %d bytes, valid UTF-8 %t", c.Type, len(c.Message), utf8.ValidString(c.Message))
		}
	}
	if len(st.FailingNodes) != MaxListedNodes {
		t.Errorf("%d failing nodes listed", len(st.FailingNodes))
	}
	for _, p := range st.FailingNodes {
		if len(p.Message) > MaxProblemMessage || !utf8.ValidString(p.Message) || len(p.Name) > 253 || len(p.Reason) > 64 {
			t.Errorf("failing node %.20s: message %d bytes (valid UTF-8 %t), name %d, reason %q", p.Name, len(p.Message), utf8.ValidString(p.Message), len(p.Name), p.Reason)
		}
	}
}

// failedGeneration3 is the rollback of generation 3, which node c failed.
var failedGeneration3 = &winproxyv1alpha1.RollbackStatus{
	Generation: 3, ConfigHash: "bad", StartTime: metav1.NewTime(t0),
	FailedNodes: []winproxyv1alpha1.NodeProblem{{Name: "c", Reason: winproxyv1alpha1.ReasonNodeDegraded, Message: "the agent reports Degraded"}},
}

func TestLastGood(t *testing.T) {
	// The selector is left out of lastGood; want is what is kept.
	spec := &winproxyv1alpha1.WindowsProxyConfigSpec{Network: winproxyv1alpha1.NetworkSpec{Name: "cbr0"}, NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}
	want := winproxyv1alpha1.WindowsProxyConfigSpec{Network: winproxyv1alpha1.NetworkSpec{Name: "cbr0"}}
	old := &winproxyv1alpha1.LastGoodConfig{Generation: 2, Spec: winproxyv1alpha1.WindowsProxyConfigSpec{Network: winproxyv1alpha1.NetworkSpec{Name: "old"}}}
	unresolved := &resolve.Error{Reason: winproxyv1alpha1.ReasonFeatureGateDisabled, Message: "WinDSR feature gate not enabled"}
	tests := []struct {
		name string
		in   Inputs
		want *winproxyv1alpha1.LastGoodConfig
	}{
		{
			name: "every node programmed the spec: it is the last good one",
			in:   Inputs{Nodes: []Node{programmedNode("a"), programmedNode("b")}, LastGood: old},
			want: &winproxyv1alpha1.LastGoodConfig{Generation: 3, Spec: want},
		},
		{
			name: "nodes that cannot use the spec keep their config and do not hold it back",
			in:   Inputs{Nodes: []Node{programmedNode("a"), {Name: "b", Err: unresolved, SpecErr: unresolved, Current: "h0", Programmed: true}}},
			want: &winproxyv1alpha1.LastGoodConfig{Generation: 3, Spec: want},
		},
		{
			name: "a node still on the old config",
			in:   Inputs{Nodes: []Node{programmedNode("a"), {Name: "b", Desired: "h2", Current: "h1", Programmed: true}}, Plan: rollout.Plan{Pending: []string{"b"}}, LastGood: old},
			want: old,
		},
		{
			name: "a node that programmed the spec and reports Degraded",
			in:   Inputs{Nodes: []Node{programmedNode("a"), func() Node { n := programmedNode("b"); n.Degraded = true; return n }()}, LastGood: old},
			want: old,
		},
		{
			name: "a node not programmed yet",
			in:   Inputs{Nodes: []Node{programmedNode("a"), {Name: "b", Desired: "h2", Current: "h2"}}, Plan: rollout.Plan{InFlight: 1}, LastGood: old},
			want: old,
		},
		{
			name: "no node can use the spec",
			in:   Inputs{Nodes: []Node{{Name: "a", Err: unresolved, SpecErr: unresolved}}, LastGood: old},
			want: old,
		},
		{
			name: "no node selected",
			in:   Inputs{LastGood: old},
			want: old,
		},
		{
			name: "a rolled-back spec is never the last good one, even once every node runs the old one",
			in:   Inputs{Nodes: []Node{programmedNode("a")}, LastGood: old, Rollback: failedGeneration3},
			want: old,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Generation, tt.in.Spec = 3, spec
			got := Compute(&winproxyv1alpha1.WindowsProxyConfigStatus{}, &tt.in, t0)
			if diff := cmp.Diff(tt.want, got.LastGood); diff != "" {
				t.Errorf("lastGood (-want,+got):\n%s", diff)
			}
			if got.Rollback != tt.in.Rollback {
				t.Errorf("rollback = %+v, want %+v", got.Rollback, tt.in.Rollback)
			}
		})
	}
}

func TestUndecodable(t *testing.T) {
	old := []metav1.Condition{
		{Type: winproxyv1alpha1.ConditionAccepted, Status: metav1.ConditionTrue, Reason: winproxyv1alpha1.ReasonValid, ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(t0)},
		{Type: winproxyv1alpha1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: winproxyv1alpha1.ReasonAsExpected, ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(t0)},
	}
	later := t0.Add(time.Hour)
	got := Undecodable(old, "c", 2, errors.New(strings.Repeat("x", 40000)), later)
	want := map[string]string{
		winproxyv1alpha1.ConditionAccepted:    "False/InvalidSpec",
		winproxyv1alpha1.ConditionReady:       "False/InvalidSpec",
		winproxyv1alpha1.ConditionReconciling: "False/InvalidSpec",
		winproxyv1alpha1.ConditionStalled:     "True/InvalidSpec",
		// What the controller cannot read it does not report on.
		winproxyv1alpha1.ConditionDegraded: "False/AsExpected",
	}
	for _, c := range got {
		if w := want[c.Type]; w != string(c.Status)+"/"+c.Reason {
			t.Errorf("%s = %s/%s, want %s", c.Type, c.Status, c.Reason, w)
		}
		if c.Reason == winproxyv1alpha1.ReasonInvalidSpec && (c.ObservedGeneration != 2 || len(c.Message) > conditions.MaxMessage || !strings.HasPrefix(c.Message, "The controller cannot read the spec: xxx")) {
			t.Errorf("%s: generation %d, message of %d bytes: %.80s", c.Type, c.ObservedGeneration, len(c.Message), c.Message)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d conditions, want %d", len(got), len(want))
	}
	if old[0].Reason != winproxyv1alpha1.ReasonValid {
		t.Error("Undecodable changed the conditions it was given")
	}
}
