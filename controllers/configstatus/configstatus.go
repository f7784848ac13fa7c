// Package configstatus computes a WindowsProxyConfig's status: its node counts and lists, and one
// condition each (Accepted, Ready, Progressing, Stalled, Reconciling, Degraded,
// DualStackDowngraded, Conflicted, RolledBack), each decided by its own function of the same facts.
// It is a pure function of what one reconcile read and decided (Inputs), so that every condition
// and message is table-tested here without a control plane; the controller gathers the inputs,
// writes the result and turns its transitions into events and metrics.
package configstatus

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/rollout"
	"github.com/winproxy/winproxy/controllers/selection"
	"github.com/winproxy/winproxy/internal/conditions"
	"github.com/winproxy/winproxy/internal/resolve"
)

// Bounds of the lists in status and in condition messages, and of the problems' messages (the
// CRD's; package conditions bounds the conditions' own). The controller bounds what it writes
// elsewhere (the failed nodes of a rollback) by the same numbers.
const (
	MaxListedNodes    = 10
	maxNamesInText    = 5
	MaxProblemMessage = 1024
)

// Node is one owned node as the status sees it, after this reconcile's writes.
type Node struct {
	Name string
	// Err is set when the config the node should run cannot be resolved for it; SpecErr when the
	// spec cannot. They differ during a rollback, when the node should run the last good config.
	Err, SpecErr *resolve.Error
	// Desired is the hash the node should run; Current the hash its WindowsProxyNode carries.
	Desired, Current string
	// Programmed and Degraded are the agent's report for Current.
	Programmed, Degraded bool
	// DegradedReason and DegradedMessage are the agent's Degraded condition.
	DegradedReason, DegradedMessage string
	// Downgraded is the agent's DualStackDowngraded condition.
	Downgraded bool
	// WaitingReason is the reason of the agent's Programmed=False for Current, e.g.
	// NetworkNotFound: why the node is not ready.
	WaitingReason string
	// Silent is set when the node's agent stopped its heartbeat (AgentAlive=False), with the
	// condition's reason and message.
	Silent                      bool
	SilentReason, SilentMessage string
}

func (n *Node) updated() bool { return n.Desired != "" && n.Current == n.Desired }

// waiting names the node in a list of nodes not ready, with the agent's reason when it gave one.
func (n *Node) waiting() string {
	if n.WaitingReason == "" {
		return n.Name
	}
	return n.Name + " (" + n.WaitingReason + ")"
}

// Inputs is everything the status is computed from.
type Inputs struct {
	Generation int64
	// Spec is the spec at Generation; it becomes status.lastGood once every node programmed it.
	Spec *winproxyv1alpha1.WindowsProxyConfigSpec
	// SelectorErr is set when spec.nodeSelector cannot be parsed.
	SelectorErr error
	// Nodes are the nodes the config owns; Conflicts those it selects that older configs own.
	Nodes     []Node
	Conflicts []selection.Conflict
	// Plan is this reconcile's rollout step; Rollout the spec's pace and MaxUnavailable its
	// budget resolved for len(Nodes).
	Plan           rollout.Plan
	Rollout        winproxyv1alpha1.RolloutSpec
	MaxUnavailable int
	// LastGood is status.lastGood before this reconcile; Rollback the rollback in effect, if any.
	LastGood *winproxyv1alpha1.LastGoodConfig
	Rollback *winproxyv1alpha1.RollbackStatus
}

// Compute returns the config status for in: its counts and lists, and one condition each, each
// decided by its own function of the same facts (statusBuilder). It keeps old's condition
// transition times where the status did not change, and does not touch observedGeneration, which
// only the controller knows to advance. Every message it writes is bounded, whatever the nodes
// and their agents report, so the status can always be written.
func Compute(old *winproxyv1alpha1.WindowsProxyConfigStatus, in *Inputs, now time.Time) winproxyv1alpha1.WindowsProxyConfigStatus {
	b := newStatusBuilder(old, in, now)
	notAccepted, notAcceptedMsg := b.accepted()
	ready, readyReason, readyMsg := b.ready()
	b.progressing()
	b.kstatus(ready, readyReason, readyMsg, notAccepted, notAcceptedMsg)
	b.degraded()
	b.dualStackDowngraded()
	b.conflicted()
	b.rolledBack()
	return *b.st
}

// statusBuilder holds the facts every condition of a config reads, and the status it builds.
type statusBuilder struct {
	in  *Inputs
	st  *winproxyv1alpha1.WindowsProxyConfigStatus
	now time.Time
	// failing are the nodes with a problem; waiting those not yet programmed on the current
	// config; downgraded those proxying IPv4 only.
	failing             []winproxyv1alpha1.NodeProblem
	waiting, downgraded []string
	// unresolved nodes cannot use the config, gateErrors of them because of feature gates.
	selected, unresolved, gateErrors int
	// shadowed: the selector matches Windows nodes, all of them held by older configs.
	shadowed bool
}

func newStatusBuilder(old *winproxyv1alpha1.WindowsProxyConfigStatus, in *Inputs, now time.Time) *statusBuilder {
	st := &winproxyv1alpha1.WindowsProxyConfigStatus{
		ObservedGeneration: old.ObservedGeneration,
		Conditions:         append([]metav1.Condition(nil), old.Conditions...),
		LastGood:           in.LastGood,
		Rollback:           in.Rollback,
	}
	if in.Rollback == nil && in.SelectorErr == nil && in.Spec != nil && fullyProgrammed(in) {
		// Without the selector, the only part of a spec the CRD does not bound: a rollback
		// selects with today's, and the copy stays a few hundred kilobytes at most. The rest is
		// kept as it is, rollout too, which the CRD would default back if it were left out.
		st.LastGood = &winproxyv1alpha1.LastGoodConfig{Generation: in.Generation, Spec: *in.Spec.DeepCopy()}
		st.LastGood.Spec.NodeSelector = nil
	}
	b := &statusBuilder{in: in, st: st, now: now, failing: FailingNodes(in), selected: len(in.Nodes)}
	b.shadowed = in.SelectorErr == nil && b.selected == 0 && len(in.Conflicts) > 0
	for i := range in.Nodes {
		n := &in.Nodes[i]
		st.Nodes.Selected++
		if n.updated() {
			st.Nodes.Updated++
			if n.Programmed {
				st.Nodes.Programmed++
			}
		}
		if n.Silent {
			st.Nodes.Unreachable++
		}
		if n.Downgraded {
			st.Nodes.DualStackDowngraded++
			b.downgraded = append(b.downgraded, n.Name)
		}
		if !n.updated() || !n.Programmed {
			b.waiting = append(b.waiting, n.waiting())
		}
		if n.SpecErr != nil {
			b.unresolved++
			if resolve.IsFeatureGateReason(n.SpecErr.Reason) {
				b.gateErrors++
			}
		}
	}
	st.Nodes.Degraded = int32(len(b.failing))
	st.FailingNodes = b.failing[:min(len(b.failing), MaxListedNodes)]
	for i, c := range in.Conflicts {
		if i == MaxListedNodes {
			break
		}
		st.ConflictingNodes = append(st.ConflictingNodes, c.Node)
	}
	return b
}

// set sets one condition, observed at the config's generation.
func (b *statusBuilder) set(t string, s metav1.ConditionStatus, reason, msg string) {
	conditions.For(&b.st.Conditions, b.in.Generation, b.now).Set(t, s, reason, msg)
}

// accepted sets Accepted: whether the config can be used on the nodes it selects. It returns
// the reason and message of a config no node can use, which also make it Stalled.
func (b *statusBuilder) accepted() (notAccepted, notAcceptedMsg string) {
	switch {
	case b.in.SelectorErr != nil:
		b.set(winproxyv1alpha1.ConditionAccepted, metav1.ConditionFalse, winproxyv1alpha1.ReasonInvalidNodeSelector,
			fmt.Sprintf("spec.nodeSelector is invalid: %v; the %d nodes the config holds keep their current config and no other node is selected until it is fixed", b.in.SelectorErr, b.selected))
	case b.shadowed:
		b.set(winproxyv1alpha1.ConditionAccepted, metav1.ConditionTrue, winproxyv1alpha1.ReasonAllNodesClaimed, claimedMessage(b.in.Conflicts))
	case b.selected == 0:
		b.set(winproxyv1alpha1.ConditionAccepted, metav1.ConditionTrue, winproxyv1alpha1.ReasonNoNodesSelected, noNodesMessage)
	case b.unresolved == b.selected:
		notAccepted = winproxyv1alpha1.ReasonNodesUnresolvable
		if b.gateErrors == b.selected {
			notAccepted = winproxyv1alpha1.ReasonInvalidFeatureGates
		}
		first := firstUnresolved(b.in.Nodes)
		notAcceptedMsg = fmt.Sprintf("The config cannot be used on any of the %d selected nodes; they keep their last good config. %s: %s", b.selected, first.Name, first.SpecErr.Message)
		b.set(winproxyv1alpha1.ConditionAccepted, metav1.ConditionFalse, notAccepted, notAcceptedMsg)
	case b.unresolved > 0:
		first := firstUnresolved(b.in.Nodes)
		b.set(winproxyv1alpha1.ConditionAccepted, metav1.ConditionTrue, winproxyv1alpha1.ReasonPartiallyResolved,
			fmt.Sprintf("The config cannot be used on %d of %d nodes, which keep their last good config (see status.failingNodes). %s: %s", b.unresolved, b.selected, first.Name, first.SpecErr.Message))
	default:
		b.set(winproxyv1alpha1.ConditionAccepted, metav1.ConditionTrue, winproxyv1alpha1.ReasonValid,
			fmt.Sprintf("The config resolved on all %d selected nodes", b.selected))
	}
	return notAccepted, notAcceptedMsg
}

// ready sets Ready: every managed node programmed the current config, and none fails.
func (b *statusBuilder) ready() (ready bool, readyReason, readyMsg string) {
	switch {
	case b.in.SelectorErr != nil:
		readyReason, readyMsg = winproxyv1alpha1.ReasonInvalidNodeSelector, "spec.nodeSelector is invalid; see the Accepted condition"
	case b.shadowed:
		readyReason, readyMsg = winproxyv1alpha1.ReasonAllNodesClaimed, claimedMessage(b.in.Conflicts)
	case b.in.Rollback != nil:
		readyReason, readyMsg = winproxyv1alpha1.ReasonRolledBack, rolledBackSummary(b.in, b.st.Nodes.Programmed)
	case b.selected == 0:
		ready, readyReason, readyMsg = true, winproxyv1alpha1.ReasonNoNodesSelected, noNodesMessage
	case len(b.waiting) == 0 && len(b.failing) == 0:
		ready, readyReason, readyMsg = true, winproxyv1alpha1.ReasonAllNodesProgrammed, fmt.Sprintf("All %d nodes programmed the current config", b.selected)
	case len(b.waiting) == 0:
		readyReason, readyMsg = winproxyv1alpha1.ReasonNodesNotProgrammed,
			fmt.Sprintf("All %d nodes programmed the current config, but %d report a problem: %s", b.selected, len(b.failing), ProblemNames(b.failing))
	default:
		readyReason, readyMsg = winproxyv1alpha1.ReasonNodesNotProgrammed,
			fmt.Sprintf("%d of %d nodes programmed the current config; waiting for %s", b.st.Nodes.Programmed, b.selected, names(b.waiting))
	}
	b.set(winproxyv1alpha1.ConditionReady, conditions.Status(ready), readyReason, readyMsg)
	return ready, readyReason, readyMsg
}

// progressing sets Progressing: where the rollout (or a rollback) stands.
func (b *statusBuilder) progressing() {
	p := &b.in.Plan
	switch {
	case b.in.SelectorErr != nil:
		b.set(winproxyv1alpha1.ConditionProgressing, metav1.ConditionFalse, winproxyv1alpha1.ReasonInvalidNodeSelector, "spec.nodeSelector is invalid; no node is changed until it is fixed")
	case len(p.Stalls) > 0:
		b.set(winproxyv1alpha1.ConditionProgressing, metav1.ConditionFalse, winproxyv1alpha1.ReasonRolloutStalled, stallMessage(b.in, p.Stalls[0]))
	case b.in.Rollout.Paused && !p.Done() && b.in.Rollback != nil:
		b.set(winproxyv1alpha1.ConditionProgressing, metav1.ConditionFalse, winproxyv1alpha1.ReasonRolloutPaused,
			fmt.Sprintf("Rollback paused with %d of %d nodes back on generation %d; set spec.rollout.paused to false to continue", b.st.Nodes.Updated, b.selected, b.in.LastGood.Generation))
	case b.in.Rollout.Paused && !p.Done():
		b.set(winproxyv1alpha1.ConditionProgressing, metav1.ConditionFalse, winproxyv1alpha1.ReasonRolloutPaused,
			fmt.Sprintf("Rollout paused with %d of %d nodes updated; set spec.rollout.paused to false to continue", b.st.Nodes.Updated, b.selected))
	case b.in.Rollback != nil && !p.Done():
		b.set(winproxyv1alpha1.ConditionProgressing, metav1.ConditionTrue, winproxyv1alpha1.ReasonRollingBack,
			fmt.Sprintf("Rolling back to generation %d: %d of %d nodes back, %d in progress (maxUnavailable %d)", b.in.LastGood.Generation, b.st.Nodes.Updated, b.selected, p.InFlight, b.in.MaxUnavailable))
	case b.in.Rollback != nil:
		b.set(winproxyv1alpha1.ConditionProgressing, metav1.ConditionFalse, winproxyv1alpha1.ReasonRollbackComplete,
			fmt.Sprintf("Every node that can use it runs generation %d again (%d of %d)", b.in.LastGood.Generation, b.st.Nodes.Updated, b.selected))
	case !p.Done():
		b.set(winproxyv1alpha1.ConditionProgressing, metav1.ConditionTrue, winproxyv1alpha1.ReasonRollingOut,
			fmt.Sprintf("Rolling out: %d of %d nodes updated, %d in progress (maxUnavailable %d)", b.st.Nodes.Updated, b.selected, p.InFlight, b.in.MaxUnavailable))
	case len(b.failing) > 0:
		b.set(winproxyv1alpha1.ConditionProgressing, metav1.ConditionFalse, winproxyv1alpha1.ReasonRolloutCompleteWithFailures,
			fmt.Sprintf("Every node that can use the config has it (%d of %d); %d nodes refused it or failed: %s; see status.failingNodes", b.st.Nodes.Updated, b.selected, len(b.failing), ProblemNames(b.failing)))
	default:
		b.set(winproxyv1alpha1.ConditionProgressing, metav1.ConditionFalse, winproxyv1alpha1.ReasonRolloutComplete,
			fmt.Sprintf("Every selected node has the config (%d of %d)", b.st.Nodes.Updated, b.selected))
	}
}

// kstatus sets Stalled and Reconciling, as kstatus reads them: Stalled when only a person can
// make the config Ready, else Reconciling while it is not Ready.
func (b *statusBuilder) kstatus(ready bool, readyReason, readyMsg, notAccepted, notAcceptedMsg string) {
	p := &b.in.Plan
	var stalled, stalledMsg string
	switch {
	case b.in.SelectorErr != nil:
		stalled, stalledMsg = winproxyv1alpha1.ReasonInvalidNodeSelector, "spec.nodeSelector is invalid; see the Accepted condition"
	case b.shadowed:
		stalled, stalledMsg = winproxyv1alpha1.ReasonAllNodesClaimed, claimedMessage(b.in.Conflicts)
	case b.in.Rollback != nil:
		stalled, stalledMsg = winproxyv1alpha1.ReasonRolledBack, rolledBackMessage(b.in, !p.Done(), b.st.Nodes.Programmed)
	case len(p.Stalls) > 0:
		stalled, stalledMsg = winproxyv1alpha1.ReasonRolloutStalled, stallMessage(b.in, p.Stalls[0])
	case notAccepted != "":
		stalled, stalledMsg = notAccepted, notAcceptedMsg
	case len(b.failing) > 0:
		stalled, stalledMsg = winproxyv1alpha1.ReasonNodesFailing,
			fmt.Sprintf("%d of %d nodes refused the config or failed: %s; see status.failingNodes. The other nodes keep rolling out", len(b.failing), b.selected, ProblemNames(b.failing))
	}
	switch {
	case stalled != "":
		b.set(winproxyv1alpha1.ConditionStalled, metav1.ConditionTrue, stalled, stalledMsg)
		b.set(winproxyv1alpha1.ConditionReconciling, metav1.ConditionFalse, stalled, "Stalled: "+stalledMsg)
	case ready:
		b.set(winproxyv1alpha1.ConditionStalled, metav1.ConditionFalse, winproxyv1alpha1.ReasonAsExpected, "Nothing keeps the config from being Ready")
		b.set(winproxyv1alpha1.ConditionReconciling, metav1.ConditionFalse, readyReason, readyMsg)
	default:
		b.set(winproxyv1alpha1.ConditionStalled, metav1.ConditionFalse, winproxyv1alpha1.ReasonAsExpected, "Nothing keeps the config from becoming Ready")
		reason, msg := readyReason, readyMsg
		if c := meta.FindStatusCondition(b.st.Conditions, winproxyv1alpha1.ConditionProgressing); c.Reason == winproxyv1alpha1.ReasonRollingOut || c.Reason == winproxyv1alpha1.ReasonRolloutPaused {
			reason, msg = c.Reason, c.Message
		}
		b.set(winproxyv1alpha1.ConditionReconciling, metav1.ConditionTrue, reason, msg)
	}
}

// degraded sets Degraded: some node has a problem.
func (b *statusBuilder) degraded() {
	if len(b.failing) > 0 {
		b.set(winproxyv1alpha1.ConditionDegraded, metav1.ConditionTrue, winproxyv1alpha1.ReasonNodesDegraded,
			fmt.Sprintf("%d of %d nodes have a problem: %s; see status.failingNodes", len(b.failing), b.selected, ProblemNames(b.failing)))
	} else {
		b.set(winproxyv1alpha1.ConditionDegraded, metav1.ConditionFalse, winproxyv1alpha1.ReasonAsExpected, "No node reports a problem")
	}
}

// dualStackDowngraded sets DualStackDowngraded: some node proxies IPv4 only.
func (b *statusBuilder) dualStackDowngraded() {
	if len(b.downgraded) > 0 {
		b.set(winproxyv1alpha1.ConditionDualStackDowngraded, metav1.ConditionTrue, winproxyv1alpha1.ReasonNodesDowngraded,
			fmt.Sprintf("%d of %d nodes proxy IPv4 only: %s; see each WindowsProxyNode's DualStackDowngraded condition", len(b.downgraded), b.selected, names(b.downgraded)))
	} else {
		b.set(winproxyv1alpha1.ConditionDualStackDowngraded, metav1.ConditionFalse, winproxyv1alpha1.ReasonAsExpected, "No node fell back to IPv4 only")
	}
}

// conflicted sets Conflicted: an older config holds some of the nodes this one selects.
func (b *statusBuilder) conflicted() {
	if len(b.in.Conflicts) > 0 {
		b.set(winproxyv1alpha1.ConditionConflicted, metav1.ConditionTrue, winproxyv1alpha1.ReasonNodesClaimedByOlderConfig, conflictMessage(b.in.Conflicts))
	} else {
		b.set(winproxyv1alpha1.ConditionConflicted, metav1.ConditionFalse, winproxyv1alpha1.ReasonAsExpected, "No older config selects these nodes")
	}
}

// rolledBack sets RolledBack: the nodes are moved back to the last good spec.
func (b *statusBuilder) rolledBack() {
	p := &b.in.Plan
	switch {
	case b.in.Rollback != nil && !p.Done():
		b.set(winproxyv1alpha1.ConditionRolledBack, metav1.ConditionTrue, winproxyv1alpha1.ReasonRollingBack, rolledBackMessage(b.in, true, b.st.Nodes.Programmed))
	case b.in.Rollback != nil:
		b.set(winproxyv1alpha1.ConditionRolledBack, metav1.ConditionTrue, winproxyv1alpha1.ReasonRollbackComplete, rolledBackMessage(b.in, false, b.st.Nodes.Programmed))
	default:
		b.set(winproxyv1alpha1.ConditionRolledBack, metav1.ConditionFalse, winproxyv1alpha1.ReasonAsExpected, "The nodes run the current spec, or are moved to it")
	}
}

// fullyProgrammed reports whether every node that can use the spec runs it and reports it
// Programmed, and at least one does: the spec is then the last good one.
func fullyProgrammed(in *Inputs) bool {
	if !in.Plan.Done() {
		return false
	}
	programmed := 0
	for i := range in.Nodes {
		n := &in.Nodes[i]
		if n.Err != nil {
			continue
		}
		if !n.updated() || !n.Programmed || n.Degraded {
			return false
		}
		programmed++
	}
	return programmed > 0
}

// rolledBackMessage says what failed, where the nodes go and what a person can do.
func rolledBackMessage(in *Inputs, moving bool, programmed int32) string {
	rb, to := in.Rollback, in.LastGood.Generation
	where := fmt.Sprintf("Every node that got it was moved back to generation %d", to)
	if moving {
		where = fmt.Sprintf("Every node that got it is moved back to generation %d, at most maxUnavailable at a time (%d of %d run it)", to, programmed, len(in.Nodes))
	}
	return fmt.Sprintf("Generation %d failed on %d nodes: %s; see status.rollback. %s, the last config every node programmed (status.lastGood). "+
		"The failed config is not rolled out again until the spec changes outside nodeSelector and rollout; set spec.rollout.autoRollback to false to roll it out again as it is",
		rb.Generation, len(rb.FailedNodes), ProblemNames(rb.FailedNodes), where)
}

// rolledBackSummary is the Ready message of a rolled-back config: short, for kubectl get -o wide.
func rolledBackSummary(in *Inputs, programmed int32) string {
	return fmt.Sprintf("Generation %d failed on %s and was rolled back: %d of %d nodes run generation %d (status.lastGood); see the RolledBack condition",
		in.Rollback.Generation, ProblemNames(in.Rollback.FailedNodes), programmed, len(in.Nodes), in.LastGood.Generation)
}

// FailingNodes lists every node that fails, in name order, each with why: all of them, where the
// status lists the first MaxListedNodes. The controller reports each new one as an event.
func FailingNodes(in *Inputs) []winproxyv1alpha1.NodeProblem {
	stalls := map[string]rollout.Stall{}
	for _, s := range in.Plan.Stalls {
		stalls[s.Node] = s
	}
	var out []winproxyv1alpha1.NodeProblem
	for i := range in.Nodes {
		if p, ok := problem(&in.Nodes[i], stalls, in.Rollout.ProgressDeadlineSeconds); ok {
			out = append(out, p)
		}
	}
	return out
}

const noNodesMessage = "No Windows node matches spec.nodeSelector (a node must also carry kubernetes.io/os=windows)"

// problem says why n fails, if it does: a resolution error first, then a silent agent, then the
// agent's Degraded report, then a missed progress deadline.
func problem(n *Node, stalls map[string]rollout.Stall, deadlineSeconds int32) (winproxyv1alpha1.NodeProblem, bool) {
	switch s, stalled := stalls[n.Name]; {
	case n.Err != nil:
		return winproxyv1alpha1.NodeProblem{Name: n.Name, Reason: n.Err.Reason, Message: conditions.Truncate(n.Err.Message, MaxProblemMessage)}, true
	case n.Silent, n.Degraded, stalled && s.DeadlineExceeded:
		return FailureProblem(n, deadlineSeconds), true
	}
	return winproxyv1alpha1.NodeProblem{}, false
}

// FailureProblem says why n failed the config it runs: its agent went silent, the agent's
// Degraded report, or else a missed progress deadline. The controller records it in
// status.rollback for each node whose failure starts a rollback, in the words
// status.failingNodes uses.
func FailureProblem(n *Node, deadlineSeconds int32) winproxyv1alpha1.NodeProblem {
	if n.Silent {
		return winproxyv1alpha1.NodeProblem{Name: n.Name, Reason: n.SilentReason, Message: conditions.Truncate(n.SilentMessage, MaxProblemMessage)}
	}
	if !n.Degraded {
		return winproxyv1alpha1.NodeProblem{Name: n.Name, Reason: winproxyv1alpha1.ReasonProgressDeadlineExceeded,
			Message: fmt.Sprintf("the node did not report Programmed within %ds of receiving config %s; check its winproxy-agent", deadlineSeconds, n.Current)}
	}
	msg := "the agent reports Degraded"
	if n.DegradedReason != "" {
		msg += " (" + n.DegradedReason + ")"
	}
	if n.DegradedMessage != "" {
		msg += ": " + n.DegradedMessage
	}
	return winproxyv1alpha1.NodeProblem{Name: n.Name, Reason: winproxyv1alpha1.ReasonNodeDegraded, Message: conditions.Truncate(msg, MaxProblemMessage)}
}

func stallMessage(in *Inputs, s rollout.Stall) string {
	what, config := "Rollout", "the new config"
	if in.Rollback != nil {
		what, config = "Rollback", fmt.Sprintf("the config of generation %d", in.LastGood.Generation)
	}
	why := fmt.Sprintf("node %s reported Degraded for %s", s.Node, config)
	if s.DeadlineExceeded {
		why = fmt.Sprintf("node %s did not report Programmed within %ds", s.Node, in.Rollout.ProgressDeadlineSeconds)
	}
	return fmt.Sprintf("%s stalled: %s; %d nodes wait and keep their current config. Fix the node (see status.failingNodes) or change the config", what, why, len(in.Plan.Pending))
}

func conflictMessage(cs []selection.Conflict) string {
	parts := make([]string, 0, maxNamesInText)
	for i, c := range cs {
		if i == maxNamesInText {
			parts = append(parts, fmt.Sprintf("and %d more", len(cs)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (owned by %s)", c.Node, c.Owner))
	}
	return fmt.Sprintf("%d selected nodes belong to older configs and are not managed by this one: %s; narrow spec.nodeSelector or delete the other config", len(cs), strings.Join(parts, ", "))
}

// claimedMessage says which older configs hold every node a shadowed config selects.
func claimedMessage(cs []selection.Conflict) string {
	count := map[string]int{}
	var owners []string
	for _, c := range cs {
		if count[c.Owner] == 0 {
			owners = append(owners, c.Owner)
		}
		count[c.Owner]++
	}
	parts := make([]string, 0, len(owners))
	for _, o := range owners {
		parts = append(parts, fmt.Sprintf("%s (%d)", o, count[o]))
	}
	return fmt.Sprintf("All %d Windows nodes spec.nodeSelector matches belong to older configs, so this config manages none: %s; narrow spec.nodeSelector, delete the older config, or delete this one", len(cs), names(parts))
}

func firstUnresolved(nodes []Node) *Node {
	for i := range nodes {
		if nodes[i].SpecErr != nil {
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

// ProblemNames names the first few failing nodes with their reasons, and counts the rest. The
// controller logs a rollback's failed nodes the way the conditions name them.
func ProblemNames(ps []winproxyv1alpha1.NodeProblem) string {
	parts := make([]string, 0, maxNamesInText+1)
	for i, p := range ps {
		if i == maxNamesInText {
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", p.Name, p.Reason))
	}
	if rest := len(ps) - len(parts); rest > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", rest))
	}
	return strings.Join(parts, ", ")
}

// Undecodable is conds, the conditions of config name at generation, once the controller found
// at now that it cannot decode its spec (decodeErr): not Accepted, not Ready, Stalled with reason
// InvalidSpec. Nothing else of the config can be trusted, so nothing else is said.
func Undecodable(conds []metav1.Condition, name string, generation int64, decodeErr error, now time.Time) []metav1.Condition {
	msg := fmt.Sprintf("The controller cannot read the spec: %v. Fix it (e.g. kubectl edit wpc %s); until then the nodes the config holds keep their current config and no other node is selected", decodeErr, name)
	out := append([]metav1.Condition(nil), conds...)
	set := conditions.For(&out, generation, now)
	set.Set(winproxyv1alpha1.ConditionAccepted, metav1.ConditionFalse, winproxyv1alpha1.ReasonInvalidSpec, msg)
	set.Set(winproxyv1alpha1.ConditionReady, metav1.ConditionFalse, winproxyv1alpha1.ReasonInvalidSpec, msg)
	set.Set(winproxyv1alpha1.ConditionReconciling, metav1.ConditionFalse, winproxyv1alpha1.ReasonInvalidSpec, msg)
	set.Set(winproxyv1alpha1.ConditionStalled, metav1.ConditionTrue, winproxyv1alpha1.ReasonInvalidSpec, msg)
	return out
}
