package controllers

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/resolve"
	"github.com/winproxy/winproxy/controllers/rollout"
)

func programmedNode(name string) nodeView {
	return nodeView{name: name, desired: "h2", current: "h2", programmed: true}
}

// summary is "Status/Reason" by condition type.
func summary(conds []metav1.Condition) map[string]string {
	out := map[string]string{}
	for _, c := range conds {
		out[c.Type] = string(c.Status) + "/" + c.Reason
	}
	return out
}

func conds(accepted, ready, progressing, degraded, downgraded, conflicted string) map[string]string {
	return map[string]string{
		winproxyv1alpha1.ConditionAccepted:            accepted,
		winproxyv1alpha1.ConditionReady:               ready,
		winproxyv1alpha1.ConditionProgressing:         progressing,
		winproxyv1alpha1.ConditionDegraded:            degraded,
		winproxyv1alpha1.ConditionDualStackDowngraded: downgraded,
		winproxyv1alpha1.ConditionConflicted:          conflicted,
	}
}

func TestComputeStatus(t *testing.T) {
	gateErr := &resolve.Error{Reason: winproxyv1alpha1.ReasonFeatureGateLocked, Message: "cannot set feature gate WinDSR to false, feature is locked to true"}
	vipErr := &resolve.Error{Reason: winproxyv1alpha1.ReasonSourceVIPUnavailable, Message: "source-vip flag not set"}
	tests := []struct {
		name        string
		in          statusInputs
		wantNodes   winproxyv1alpha1.NodeCounts
		wantConds   map[string]string
		wantFailing []winproxyv1alpha1.NodeProblem
		wantMsg     map[string]string // substrings of condition messages
	}{
		{
			name:      "no node selected is ready",
			wantConds: conds("True/NoNodesSelected", "True/NoNodesSelected", "False/RolloutComplete", "False/AsExpected", "False/AsExpected", "False/AsExpected"),
		},
		{
			name:      "all programmed",
			in:        statusInputs{nodes: []nodeView{programmedNode("a"), programmedNode("b")}},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Updated: 2, Programmed: 2},
			wantConds: conds("True/Valid", "True/AllNodesProgrammed", "False/RolloutComplete", "False/AsExpected", "False/AsExpected", "False/AsExpected"),
		},
		{
			name: "rolling out",
			in: statusInputs{
				nodes:      []nodeView{programmedNode("a"), {name: "b", desired: "h2", current: "h2"}, {name: "c", desired: "h2", current: "h1", programmed: true}},
				plan:       rollout.Plan{Pending: []string{"c"}, InFlight: 1},
				maxUnavail: 1,
			},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 3, Updated: 2, Programmed: 1},
			wantConds: conds("True/Valid", "False/NodesNotProgrammed", "True/RollingOut", "False/AsExpected", "False/AsExpected", "False/AsExpected"),
			wantMsg: map[string]string{
				winproxyv1alpha1.ConditionReady:       "1 of 3 nodes programmed the current config; waiting for b, c",
				winproxyv1alpha1.ConditionProgressing: "Rolling out: 2 of 3 nodes updated, 1 in progress (maxUnavailable 1)",
			},
		},
		{
			name: "stalled by a missed deadline",
			in: statusInputs{
				nodes:   []nodeView{{name: "a", desired: "h2", current: "h2"}, {name: "b", desired: "h2", current: "h1", programmed: true}},
				plan:    rollout.Plan{Pending: []string{"b"}, InFlight: 1, Stalls: []rollout.Stall{{Node: "a", DeadlineExceeded: true}}},
				rollout: winproxyv1alpha1.RolloutSpec{ProgressDeadlineSeconds: 60},
			},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Updated: 1, Degraded: 1},
			wantConds: conds("True/Valid", "False/NodesNotProgrammed", "False/RolloutStalled", "True/NodesDegraded", "False/AsExpected", "False/AsExpected"),
			wantFailing: []winproxyv1alpha1.NodeProblem{{Name: "a", Reason: winproxyv1alpha1.ReasonProgressDeadlineExceeded,
				Message: "the node did not report Programmed within 60s of receiving config h2; check its winproxy-agent"}},
			wantMsg: map[string]string{winproxyv1alpha1.ConditionProgressing: "Rollout stalled: node a did not report Programmed within 60s; 1 nodes wait"},
		},
		{
			name: "stalled by a degraded node",
			in: statusInputs{
				nodes: []nodeView{{name: "a", desired: "h2", current: "h2", degraded: true, degradedReason: "SyncFailed", degradedMessage: "3 load balancers failed"}},
				plan:  rollout.Plan{InFlight: 1, Stalls: []rollout.Stall{{Node: "a"}}},
			},
			wantNodes:   winproxyv1alpha1.NodeCounts{Selected: 1, Updated: 1, Degraded: 1},
			wantConds:   conds("True/Valid", "False/NodesNotProgrammed", "False/RolloutStalled", "True/NodesDegraded", "False/AsExpected", "False/AsExpected"),
			wantFailing: []winproxyv1alpha1.NodeProblem{{Name: "a", Reason: winproxyv1alpha1.ReasonNodeDegraded, Message: "the agent reports Degraded (SyncFailed): 3 load balancers failed"}},
			wantMsg:     map[string]string{winproxyv1alpha1.ConditionDegraded: "1 of 1 nodes have a problem: a (NodeDegraded)"},
		},
		{
			name:      "gates invalid on every node: not accepted",
			in:        statusInputs{nodes: []nodeView{{name: "a", err: gateErr, current: "h0"}, {name: "b", err: gateErr}}},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Degraded: 2},
			wantConds: conds("False/InvalidFeatureGates", "False/NodesNotProgrammed", "False/RolloutComplete", "True/NodesDegraded", "False/AsExpected", "False/AsExpected"),
			wantFailing: []winproxyv1alpha1.NodeProblem{
				{Name: "a", Reason: gateErr.Reason, Message: gateErr.Message},
				{Name: "b", Reason: gateErr.Reason, Message: gateErr.Message},
			},
			wantMsg: map[string]string{winproxyv1alpha1.ConditionAccepted: "The config cannot be used on any of the 2 selected nodes; they keep their last good config. a: cannot set feature gate WinDSR"},
		},
		{
			name:      "every node fails, not only on gates",
			in:        statusInputs{nodes: []nodeView{{name: "a", err: gateErr}, {name: "b", err: vipErr}}},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Degraded: 2},
			wantConds: conds("False/NodesUnresolvable", "False/NodesNotProgrammed", "False/RolloutComplete", "True/NodesDegraded", "False/AsExpected", "False/AsExpected"),
			wantFailing: []winproxyv1alpha1.NodeProblem{
				{Name: "a", Reason: gateErr.Reason, Message: gateErr.Message},
				{Name: "b", Reason: vipErr.Reason, Message: vipErr.Message},
			},
		},
		{
			name:        "gates invalid on some nodes: accepted, degraded",
			in:          statusInputs{nodes: []nodeView{programmedNode("a"), {name: "b", err: gateErr}}},
			wantNodes:   winproxyv1alpha1.NodeCounts{Selected: 2, Updated: 1, Programmed: 1, Degraded: 1},
			wantConds:   conds("True/PartiallyResolved", "False/NodesNotProgrammed", "False/RolloutComplete", "True/NodesDegraded", "False/AsExpected", "False/AsExpected"),
			wantFailing: []winproxyv1alpha1.NodeProblem{{Name: "b", Reason: gateErr.Reason, Message: gateErr.Message}},
			wantMsg:     map[string]string{winproxyv1alpha1.ConditionAccepted: "The config cannot be used on 1 of 2 nodes"},
		},
		{
			name: "paused",
			in: statusInputs{
				nodes:   []nodeView{programmedNode("a"), {name: "b", desired: "h2", current: "h1", programmed: true}},
				plan:    rollout.Plan{Pending: []string{"b"}},
				rollout: winproxyv1alpha1.RolloutSpec{Paused: true},
			},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Updated: 1, Programmed: 1},
			wantConds: conds("True/Valid", "False/NodesNotProgrammed", "False/RolloutPaused", "False/AsExpected", "False/AsExpected", "False/AsExpected"),
		},
		{
			name: "downgraded and conflicted",
			in: statusInputs{
				nodes:     []nodeView{func() nodeView { n := programmedNode("a"); n.downgraded = true; return n }()},
				conflicts: []conflict{{node: "x", owner: "older"}},
			},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 1, Updated: 1, Programmed: 1, DualStackDowngraded: 1},
			wantConds: conds("True/Valid", "True/AllNodesProgrammed", "False/RolloutComplete", "False/AsExpected", "True/NodesDowngraded", "True/NodesClaimedByOlderConfig"),
			wantMsg: map[string]string{
				winproxyv1alpha1.ConditionConflicted:          "1 selected nodes belong to older configs and are not managed by this one: x (owned by older)",
				winproxyv1alpha1.ConditionDualStackDowngraded: "1 of 1 nodes proxy IPv4 only: a",
			},
		},
		{
			name: "invalid selector: the held nodes are kept as they are",
			in: statusInputs{
				selectorErr: errors.New(`"Bogus" is not a valid label selector operator`),
				nodes:       []nodeView{programmedNode("a"), {name: "b", desired: "h2", current: "h1", programmed: true}},
			},
			wantNodes: winproxyv1alpha1.NodeCounts{Selected: 2, Updated: 1, Programmed: 1},
			wantConds: conds("False/InvalidNodeSelector", "False/InvalidNodeSelector", "False/InvalidNodeSelector", "False/AsExpected", "False/AsExpected", "False/AsExpected"),
			wantMsg: map[string]string{
				winproxyv1alpha1.ConditionAccepted:    "the 2 nodes the config holds keep their current config and no other node is selected until it is fixed",
				winproxyv1alpha1.ConditionProgressing: "no node is changed until it is fixed",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.generation = 3
			got := computeStatus(&winproxyv1alpha1.WindowsProxyConfigStatus{}, &tt.in, t0)
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
		})
	}
}

func TestComputeStatusBoundsAndTransitions(t *testing.T) {
	in := statusInputs{generation: 1}
	for i := range 25 {
		name := string(rune('a'+i)) + "-node"
		in.nodes = append(in.nodes, nodeView{name: name, err: &resolve.Error{Reason: winproxyv1alpha1.ReasonUnknownFeatureGate, Message: "unrecognized feature gate: X"}})
		in.conflicts = append(in.conflicts, conflict{node: "other-" + name, owner: "old"})
	}
	first := computeStatus(&winproxyv1alpha1.WindowsProxyConfigStatus{}, &in, t0)
	if len(first.FailingNodes) != maxListedNodes || len(first.ConflictingNodes) != maxListedNodes {
		t.Errorf("lists not bounded: %d failing, %d conflicting", len(first.FailingNodes), len(first.ConflictingNodes))
	}
	if c := meta.FindStatusCondition(first.Conditions, winproxyv1alpha1.ConditionDegraded); !strings.Contains(c.Message, "and 20 more") {
		t.Errorf("Degraded message does not count the rest: %q", c.Message)
	}

	// Same status later: transition times are kept and nothing changes.
	again := computeStatus(&first, &in, t0.Add(time.Hour))
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("recomputing an unchanged status changed it (-first,+again):\n%s", diff)
	}
	// A flip moves the transition time.
	in.nodes = nil
	flipped := computeStatus(&first, &in, t0.Add(time.Hour))
	if c := meta.FindStatusCondition(flipped.Conditions, winproxyv1alpha1.ConditionReady); !c.LastTransitionTime.Time.Equal(t0.Add(time.Hour)) {
		t.Errorf("Ready flipped but kept transition time %v", c.LastTransitionTime)
	}
}
