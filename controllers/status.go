package controllers

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/resolve"
	"github.com/winproxy/winproxy/controllers/rollout"
)

// Bounds of the lists in status and in condition messages.
const (
	maxListedNodes = 10
	maxNamesInText = 5
)

// nodeView is one owned node as the status sees it, after this reconcile's writes.
type nodeView struct {
	name string
	// err is set when the config cannot be resolved for the node.
	err *resolve.Error
	// desired is the hash the node should run; current the hash its WindowsProxyNode carries.
	desired, current string
	// programmed and degraded are the agent's report for current.
	programmed, degraded bool
	// degradedReason and degradedMessage are the agent's Degraded condition.
	degradedReason, degradedMessage string
	// downgraded is the agent's DualStackDowngraded condition.
	downgraded bool
}

func (n *nodeView) updated() bool { return n.desired != "" && n.current == n.desired }

// statusInputs is everything the status is computed from.
type statusInputs struct {
	generation int64
	// selectorErr is set when spec.nodeSelector cannot be parsed.
	selectorErr error
	nodes       []nodeView
	conflicts   []conflict
	plan        rollout.Plan
	rollout     winproxyv1alpha1.RolloutSpec
	maxUnavail  int
}

// computeStatus returns the config status for in, keeping old's condition transition times
// where the status did not change. It does not touch observedGeneration.
func computeStatus(old *winproxyv1alpha1.WindowsProxyConfigStatus, in *statusInputs, now time.Time) winproxyv1alpha1.WindowsProxyConfigStatus {
	st := winproxyv1alpha1.WindowsProxyConfigStatus{
		ObservedGeneration: old.ObservedGeneration,
		Conditions:         append([]metav1.Condition(nil), old.Conditions...),
	}
	stalls := map[string]rollout.Stall{}
	for _, s := range in.plan.Stalls {
		stalls[s.Node] = s
	}
	var failing []winproxyv1alpha1.NodeProblem
	var waiting, downgraded []string
	var unresolved, gateErrors int
	for i := range in.nodes {
		n := &in.nodes[i]
		st.Nodes.Selected++
		if n.updated() {
			st.Nodes.Updated++
			if n.programmed {
				st.Nodes.Programmed++
			}
		}
		if n.downgraded {
			st.Nodes.DualStackDowngraded++
			downgraded = append(downgraded, n.name)
		}
		if !n.updated() || !n.programmed {
			waiting = append(waiting, n.name)
		}
		if p, ok := problem(n, stalls, in.rollout.ProgressDeadlineSeconds); ok {
			st.Nodes.Degraded++
			failing = append(failing, p)
		}
		if n.err != nil {
			unresolved++
			if resolve.IsFeatureGateReason(n.err.Reason) {
				gateErrors++
			}
		}
	}
	if len(failing) > maxListedNodes {
		failing = failing[:maxListedNodes]
	}
	st.FailingNodes = failing
	for i, c := range in.conflicts {
		if i == maxListedNodes {
			break
		}
		st.ConflictingNodes = append(st.ConflictingNodes, c.node)
	}

	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: in.generation,
			LastTransitionTime: metav1.NewTime(now.Truncate(time.Second)),
		})
	}
	selected := len(in.nodes)

	// Accepted.
	switch {
	case in.selectorErr != nil:
		set(winproxyv1alpha1.ConditionAccepted, metav1.ConditionFalse, winproxyv1alpha1.ReasonInvalidNodeSelector,
			fmt.Sprintf("spec.nodeSelector is invalid: %v; the %d nodes the config holds keep their current config and no other node is selected until it is fixed", in.selectorErr, selected))
	case selected == 0:
		set(winproxyv1alpha1.ConditionAccepted, metav1.ConditionTrue, winproxyv1alpha1.ReasonNoNodesSelected, noNodesMessage)
	case unresolved == selected:
		reason := winproxyv1alpha1.ReasonNodesUnresolvable
		if gateErrors == selected {
			reason = winproxyv1alpha1.ReasonInvalidFeatureGates
		}
		first := firstUnresolved(in.nodes)
		set(winproxyv1alpha1.ConditionAccepted, metav1.ConditionFalse, reason,
			fmt.Sprintf("The config cannot be used on any of the %d selected nodes; they keep their last good config. %s: %s", selected, first.name, first.err.Message))
	case unresolved > 0:
		first := firstUnresolved(in.nodes)
		set(winproxyv1alpha1.ConditionAccepted, metav1.ConditionTrue, winproxyv1alpha1.ReasonPartiallyResolved,
			fmt.Sprintf("The config cannot be used on %d of %d nodes, which keep their last good config (see status.failingNodes). %s: %s", unresolved, selected, first.name, first.err.Message))
	default:
		set(winproxyv1alpha1.ConditionAccepted, metav1.ConditionTrue, winproxyv1alpha1.ReasonValid,
			fmt.Sprintf("The config resolved on all %d selected nodes", selected))
	}

	// Ready.
	switch {
	case in.selectorErr != nil:
		set(winproxyv1alpha1.ConditionReady, metav1.ConditionFalse, winproxyv1alpha1.ReasonInvalidNodeSelector, "spec.nodeSelector is invalid; see the Accepted condition")
	case selected == 0:
		set(winproxyv1alpha1.ConditionReady, metav1.ConditionTrue, winproxyv1alpha1.ReasonNoNodesSelected, noNodesMessage)
	case len(waiting) == 0:
		set(winproxyv1alpha1.ConditionReady, metav1.ConditionTrue, winproxyv1alpha1.ReasonAllNodesProgrammed,
			fmt.Sprintf("All %d nodes programmed the current config", selected))
	default:
		set(winproxyv1alpha1.ConditionReady, metav1.ConditionFalse, winproxyv1alpha1.ReasonNodesNotProgrammed,
			fmt.Sprintf("%d of %d nodes programmed the current config; waiting for %s", st.Nodes.Programmed, selected, names(waiting)))
	}

	// Progressing.
	p := &in.plan
	switch {
	case in.selectorErr != nil:
		set(winproxyv1alpha1.ConditionProgressing, metav1.ConditionFalse, winproxyv1alpha1.ReasonInvalidNodeSelector, "spec.nodeSelector is invalid; no node is changed until it is fixed")
	case len(p.Stalls) > 0:
		set(winproxyv1alpha1.ConditionProgressing, metav1.ConditionFalse, winproxyv1alpha1.ReasonRolloutStalled, stallMessage(in, stalls[p.Stalls[0].Node]))
	case in.rollout.Paused && !p.Done():
		set(winproxyv1alpha1.ConditionProgressing, metav1.ConditionFalse, winproxyv1alpha1.ReasonRolloutPaused,
			fmt.Sprintf("Rollout paused with %d of %d nodes updated; set spec.rollout.paused to false to continue", st.Nodes.Updated, selected))
	case !p.Done():
		set(winproxyv1alpha1.ConditionProgressing, metav1.ConditionTrue, winproxyv1alpha1.ReasonRollingOut,
			fmt.Sprintf("Rolling out: %d of %d nodes updated, %d in progress (maxUnavailable %d)", st.Nodes.Updated, selected, p.InFlight, in.maxUnavail))
	default:
		set(winproxyv1alpha1.ConditionProgressing, metav1.ConditionFalse, winproxyv1alpha1.ReasonRolloutComplete,
			fmt.Sprintf("Every node that can use the config has it (%d of %d)", st.Nodes.Updated, selected))
	}

	// Degraded.
	if st.Nodes.Degraded > 0 {
		set(winproxyv1alpha1.ConditionDegraded, metav1.ConditionTrue, winproxyv1alpha1.ReasonNodesDegraded,
			fmt.Sprintf("%d of %d nodes have a problem: %s; see status.failingNodes", st.Nodes.Degraded, selected, problemNames(failing, int(st.Nodes.Degraded))))
	} else {
		set(winproxyv1alpha1.ConditionDegraded, metav1.ConditionFalse, winproxyv1alpha1.ReasonAsExpected, "No node reports a problem")
	}

	// DualStackDowngraded.
	if len(downgraded) > 0 {
		set(winproxyv1alpha1.ConditionDualStackDowngraded, metav1.ConditionTrue, winproxyv1alpha1.ReasonNodesDowngraded,
			fmt.Sprintf("%d of %d nodes proxy IPv4 only: %s; see each WindowsProxyNode's DualStackDowngraded condition", len(downgraded), selected, names(downgraded)))
	} else {
		set(winproxyv1alpha1.ConditionDualStackDowngraded, metav1.ConditionFalse, winproxyv1alpha1.ReasonAsExpected, "No node fell back to IPv4 only")
	}

	// Conflicted.
	if len(in.conflicts) > 0 {
		set(winproxyv1alpha1.ConditionConflicted, metav1.ConditionTrue, winproxyv1alpha1.ReasonNodesClaimedByOlderConfig, conflictMessage(in.conflicts))
	} else {
		set(winproxyv1alpha1.ConditionConflicted, metav1.ConditionFalse, winproxyv1alpha1.ReasonAsExpected, "No older config selects these nodes")
	}
	return st
}

const noNodesMessage = "No Windows node matches spec.nodeSelector (a node must also carry kubernetes.io/os=windows)"

// problem says why n fails, if it does: a resolution error first, then the agent's Degraded
// report, then a missed progress deadline.
func problem(n *nodeView, stalls map[string]rollout.Stall, deadlineSeconds int32) (winproxyv1alpha1.NodeProblem, bool) {
	switch s, stalled := stalls[n.name]; {
	case n.err != nil:
		return winproxyv1alpha1.NodeProblem{Name: n.name, Reason: n.err.Reason, Message: truncate(n.err.Message, 1024)}, true
	case n.degraded:
		msg := "the agent reports Degraded"
		if n.degradedReason != "" {
			msg += " (" + n.degradedReason + ")"
		}
		if n.degradedMessage != "" {
			msg += ": " + n.degradedMessage
		}
		return winproxyv1alpha1.NodeProblem{Name: n.name, Reason: winproxyv1alpha1.ReasonNodeDegraded, Message: truncate(msg, 1024)}, true
	case stalled && s.DeadlineExceeded:
		return winproxyv1alpha1.NodeProblem{Name: n.name, Reason: winproxyv1alpha1.ReasonProgressDeadlineExceeded,
			Message: fmt.Sprintf("the node did not report Programmed within %ds of receiving config %s; check its winproxy-agent", deadlineSeconds, n.current)}, true
	}
	return winproxyv1alpha1.NodeProblem{}, false
}

func stallMessage(in *statusInputs, s rollout.Stall) string {
	why := fmt.Sprintf("node %s reported Degraded for the new config", s.Node)
	if s.DeadlineExceeded {
		why = fmt.Sprintf("node %s did not report Programmed within %ds", s.Node, in.rollout.ProgressDeadlineSeconds)
	}
	return fmt.Sprintf("Rollout stalled: %s; %d nodes wait and keep their current config. Fix the node (see status.failingNodes) or change the config", why, len(in.plan.Pending))
}

func conflictMessage(cs []conflict) string {
	parts := make([]string, 0, maxNamesInText)
	for i, c := range cs {
		if i == maxNamesInText {
			parts = append(parts, fmt.Sprintf("and %d more", len(cs)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (owned by %s)", c.node, c.owner))
	}
	return fmt.Sprintf("%d selected nodes belong to older configs and are not managed by this one: %s; narrow spec.nodeSelector or delete the other config", len(cs), strings.Join(parts, ", "))
}

func firstUnresolved(nodes []nodeView) *nodeView {
	for i := range nodes {
		if nodes[i].err != nil {
			return &nodes[i]
		}
	}
	return nil
}

// names lists up to maxNamesInText names and counts the rest.
func names(all []string) string {
	if len(all) <= maxNamesInText {
		return strings.Join(all, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(all[:maxNamesInText], ", "), len(all)-maxNamesInText)
}

func problemNames(ps []winproxyv1alpha1.NodeProblem, total int) string {
	parts := make([]string, 0, maxNamesInText+1)
	for i, p := range ps {
		if i == maxNamesInText {
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", p.Name, p.Reason))
	}
	if rest := total - len(parts); rest > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", rest))
	}
	return strings.Join(parts, ", ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
