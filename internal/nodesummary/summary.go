// Package nodesummary computes the kstatus summary of a WindowsProxyNode (Ready, Reconciling,
// Stalled) from its other conditions. Two writers share the status: the agent reports what it
// programmed, and the controller reports when the agent's heartbeat stops or returns (AgentAlive).
// Both end every write with Set, so whoever writes last, the summary agrees with the facts next to
// it, and kstatus (Flux, Argo CD, `kubectl wait`, `helm --wait`) reads a node as:
//
//   - Current (Ready=True) when the agent is alive and programmed the current spec;
//   - InProgress (Reconciling=True) while it has not acted on the current spec, catches up with
//     changes (ProgrammingBehind), waits for its network to come back, or has not reported since
//     its heartbeat returned;
//   - Failed (Stalled=True) when its heartbeat stopped, it refused the config (source VIP, HNS
//     version, node IP), its network is missing or of the wrong type, or it reports Degraded.
package nodesummary

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/conditions"
)

// transient are the reasons of Programmed=False that end without anyone's help: the network being
// recreated, and changes the agent is still working through.
var transient = map[string]bool{
	v1alpha1.ReasonWaitingForNetwork: true,
	v1alpha1.ReasonProgrammingBehind: true,
}

// verdict is the summary: which of the three is True (or Ready's status when none is), and why.
type verdict struct {
	ready           metav1.ConditionStatus
	reconciling     bool
	stalled         bool
	reason, message string
}

// Set writes Ready, Reconciling and Stalled into st, a status of wpn, as of now: at most one of
// them True, each with the reason and message of the condition that decided it.
func Set(st *v1alpha1.WindowsProxyNodeStatus, wpn *v1alpha1.WindowsProxyNode, now time.Time) {
	v := decide(st, wpn)
	set := conditions.For(&st.Conditions, wpn.Generation, now)
	set.Set(v1alpha1.ConditionReady, v.ready, v.reason, v.message)
	set.SetBool(v1alpha1.ConditionReconciling, v.reconciling, v.reason, v.message)
	if !v.stalled {
		// As on a config: an abnormal-true condition that is False says nothing is wrong.
		v.reason, v.message = v1alpha1.ReasonAsExpected, "Nothing keeps the node from being Ready"
	}
	set.SetBool(v1alpha1.ConditionStalled, v.stalled, v.reason, v.message)
}

// decide is the summary's rule, in order: a silent agent vouches for nothing; a report of an
// older spec says nothing about this one; then the agent's own report decides.
func decide(st *v1alpha1.WindowsProxyNodeStatus, wpn *v1alpha1.WindowsProxyNode) verdict {
	find := func(t string) *metav1.Condition { return meta.FindStatusCondition(st.Conditions, t) }
	if alive := find(v1alpha1.ConditionAgentAlive); alive != nil && alive.Status == metav1.ConditionFalse {
		return verdict{ready: metav1.ConditionUnknown, stalled: true, reason: alive.Reason, message: alive.Message}
	}
	programmed := find(v1alpha1.ConditionProgrammed)
	if st.ObservedHash != wpn.Spec.Hash || programmed == nil || programmed.ObservedGeneration != wpn.Generation {
		return verdict{ready: metav1.ConditionFalse, reconciling: true, reason: v1alpha1.ReasonSpecNotObserved,
			message: fmt.Sprintf("the agent has not reported on spec %s (generation %d) yet", wpn.Spec.Hash, wpn.Generation)}
	}
	if programmed.Status == metav1.ConditionUnknown {
		return verdict{ready: metav1.ConditionFalse, reconciling: true, reason: programmed.Reason,
			message: "waiting for the agent to report what is programmed: " + programmed.Message}
	}
	if degraded := find(v1alpha1.ConditionDegraded); degraded != nil && degraded.Status == metav1.ConditionTrue {
		return verdict{ready: metav1.ConditionFalse, stalled: true, reason: degraded.Reason, message: degraded.Message}
	}
	if programmed.Status == metav1.ConditionFalse {
		return verdict{ready: metav1.ConditionFalse, reconciling: transient[programmed.Reason], stalled: !transient[programmed.Reason],
			reason: programmed.Reason, message: programmed.Message}
	}
	return verdict{ready: metav1.ConditionTrue, reason: programmed.Reason, message: programmed.Message}
}
