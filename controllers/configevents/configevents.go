// Package configevents decides the events the controller records about a WindowsProxyConfig
// (events.k8s.io, regarding the config): rollout, rollback, conflict and stall transitions between
// two statuses, and failing nodes at a bounded rate. It is pure: the controller records what it
// returns.
package configevents

import (
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/conditions"
)

// Event reasons. A failing node's Warning has the node's own reason, one of the per-node reasons
// of api/v1alpha1 (e.g. FeatureGateDisabled), and a config that stalls for a reason no other event
// covers gets a Warning with the Stalled reason (e.g. AllNodesClaimed, InvalidNodeSelector,
// InvalidSpec). A rollback is a Warning RolledBack naming the nodes that failed, and a Normal
// RollbackCompleted once the nodes run the last good config.
const (
	RolloutStarted               = "RolloutStarted"
	RolloutCompleted             = "RolloutCompleted"
	RolloutCompletedWithFailures = "RolloutCompletedWithFailures"
	RolloutStalled               = "RolloutStalled"
	Conflict                     = "Conflict"
	RolledBack                   = "RolledBack"
	RollbackCompleted            = "RollbackCompleted"
	// HeartbeatRestored is the Normal event of a node whose agent renews its heartbeat again
	// after the controller reported it lost or stuck (whose Warning has that reason).
	HeartbeatRestored = "HeartbeatRestored"
)

// Event actions: what the controller was doing.
const (
	ActionRollout = "Rollout"
	ActionSelect  = "Select"
	ActionDecode  = "Decode"
)

// MaxNote is the longest note events.k8s.io accepts, in bytes.
const MaxNote = 1024

// NodeInterval is the least time between two Warnings about the same node failing for the same
// reason: a node that flaps between failing and recovering is reported once per interval.
const NodeInterval = 10 * time.Minute

// Event is one event to record about a config.
type Event struct {
	Type, Reason, Action string
	// Note is bounded by MaxNote.
	Note string
	// Node is the node the event is about, "" when it is about the config as a whole: the
	// controller relates the event to that Node.
	Node string
}

func event(typ, reason, action, note string) Event {
	return Event{Type: typ, Reason: reason, Action: action, Note: conditions.Truncate(note, MaxNote)}
}

// stallReasons are the Stalled reasons that no other event reports: a rollout stall has its own
// event, and failing nodes (also behind InvalidFeatureGates and NodesUnresolvable) theirs.
var stallReasons = map[string]bool{
	winproxyv1alpha1.ReasonAllNodesClaimed:     true,
	winproxyv1alpha1.ReasonInvalidNodeSelector: true,
}

// Transitions are the events of a config whose conditions went from before to after: where the
// rollout or a rollback stands, a new conflict, a new stall.
func Transitions(before, after []metav1.Condition) []Event {
	out := progressing(before, after)
	prevRB := meta.FindStatusCondition(before, winproxyv1alpha1.ConditionRolledBack)
	switch rb := meta.FindStatusCondition(after, winproxyv1alpha1.ConditionRolledBack); {
	case rb == nil || rb.Status != metav1.ConditionTrue:
	case prevRB == nil || prevRB.Status != metav1.ConditionTrue:
		out = append(out, event(corev1.EventTypeWarning, RolledBack, ActionRollout, rb.Message))
	case prevRB.Reason == winproxyv1alpha1.ReasonRollingBack && rb.Reason == winproxyv1alpha1.ReasonRollbackComplete:
		out = append(out, event(corev1.EventTypeNormal, RollbackCompleted, ActionRollout, rb.Message))
	}
	if !meta.IsStatusConditionTrue(before, winproxyv1alpha1.ConditionConflicted) && meta.IsStatusConditionTrue(after, winproxyv1alpha1.ConditionConflicted) {
		out = append(out, event(corev1.EventTypeWarning, Conflict, ActionSelect, meta.FindStatusCondition(after, winproxyv1alpha1.ConditionConflicted).Message))
	}
	prevStall := meta.FindStatusCondition(before, winproxyv1alpha1.ConditionStalled)
	stall := meta.FindStatusCondition(after, winproxyv1alpha1.ConditionStalled)
	if stall != nil && stall.Status == metav1.ConditionTrue && stallReasons[stall.Reason] &&
		(prevStall == nil || prevStall.Status != metav1.ConditionTrue || prevStall.Reason != stall.Reason) {
		out = append(out, event(corev1.EventTypeWarning, stall.Reason, ActionSelect, stall.Message))
	}
	return out
}

// progressing is the event of a rollout that started, completed or stalled.
func progressing(before, after []metav1.Condition) []Event {
	prevReason := ""
	if prev := meta.FindStatusCondition(before, winproxyv1alpha1.ConditionProgressing); prev != nil {
		prevReason = prev.Reason
	}
	cur := meta.FindStatusCondition(after, winproxyv1alpha1.ConditionProgressing)
	if cur == nil || cur.Reason == prevReason {
		return nil
	}
	switch cur.Reason {
	case winproxyv1alpha1.ReasonRollingOut:
		return []Event{event(corev1.EventTypeNormal, RolloutStarted, ActionRollout, cur.Message)}
	case winproxyv1alpha1.ReasonRolloutComplete:
		if prevReason == winproxyv1alpha1.ReasonRollingOut {
			return []Event{event(corev1.EventTypeNormal, RolloutCompleted, ActionRollout, cur.Message)}
		}
	case winproxyv1alpha1.ReasonRolloutCompleteWithFailures:
		if prevReason == winproxyv1alpha1.ReasonRollingOut || prevReason == winproxyv1alpha1.ReasonRolloutStalled {
			return []Event{event(corev1.EventTypeWarning, RolloutCompletedWithFailures, ActionRollout, cur.Message)}
		}
	case winproxyv1alpha1.ReasonRolloutStalled:
		return []Event{event(corev1.EventTypeWarning, RolloutStalled, ActionRollout, cur.Message)}
	}
	return nil
}

// NodeFailures decides which failing nodes to report in a Warning Event: a node that starts
// failing, or fails for another reason, unless the same config, node and reason were reported
// less than NodeInterval ago; and which silent nodes to report restored. It is memory only; after
// a restart it takes the config's status.failingNodes as already reported, so a restart repeats
// at most the nodes beyond that bounded list. The zero NodeFailures is ready; it is safe for
// concurrent use.
type NodeFailures struct {
	mu sync.Mutex
	// failing is, by config, the reason each of its failing nodes fails for.
	failing map[string]map[string]string
	// reported is, by config, when each node and reason was last reported.
	reported map[string]map[nodeReason]time.Time
}

type nodeReason struct{ node, reason string }

// silentReasons are the failures of a node whose agent went silent; their end is reported too.
var silentReasons = map[string]bool{winproxyv1alpha1.ReasonHeartbeatLost: true, winproxyv1alpha1.ReasonSyncLoopStuck: true}

// Events returns the events of config's failing nodes at now: a Normal HeartbeatRestored for
// each node whose agent was silent and is not now, then a Warning with the node's reason for each
// node to report. listed is the config's status.failingNodes before this reconcile; problems are
// all its failing nodes now.
func (f *NodeFailures) Events(config string, listed, problems []winproxyv1alpha1.NodeProblem, now time.Time) []Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Event
	for _, name := range f.restored(config, listed, problems) {
		e := event(corev1.EventTypeNormal, HeartbeatRestored, ActionRollout, fmt.Sprintf("Node %s: the agent renews its heartbeat again", name))
		e.Node = name
		out = append(out, e)
	}
	for _, p := range f.report(config, listed, problems, now) {
		e := event(corev1.EventTypeWarning, p.Reason, ActionRollout, fmt.Sprintf("Node %s: %s", p.Name, p.Message))
		e.Node = p.Name
		out = append(out, e)
	}
	return out
}

// previous is the reason each of config's nodes failed for at the last report, or as listed in
// its status when nothing was reported since the start.
func (f *NodeFailures) previous(config string, listed []winproxyv1alpha1.NodeProblem) map[string]string {
	prev, known := f.failing[config]
	if !known {
		prev = make(map[string]string, len(listed))
		for _, p := range listed {
			prev[p.Name] = p.Reason
		}
	}
	return prev
}

// restored returns the nodes of config whose agent was silent at the last report and is not now.
func (f *NodeFailures) restored(config string, listed, problems []winproxyv1alpha1.NodeProblem) []string {
	silentNow := map[string]bool{}
	for _, p := range problems {
		silentNow[p.Name] = silentReasons[p.Reason]
	}
	var out []string
	for name, reason := range f.previous(config, listed) {
		if silentReasons[reason] && !silentNow[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// report returns the problems of config to report now, and remembers them.
func (f *NodeFailures) report(config string, listed, problems []winproxyv1alpha1.NodeProblem, now time.Time) []winproxyv1alpha1.NodeProblem {
	if f.failing == nil {
		f.failing, f.reported = map[string]map[string]string{}, map[string]map[nodeReason]time.Time{}
	}
	prev := f.previous(config, listed)
	reported := f.reported[config]
	if reported == nil {
		reported = map[nodeReason]time.Time{}
		f.reported[config] = reported
	}
	for k, t := range reported {
		if now.Sub(t) >= NodeInterval {
			delete(reported, k)
		}
	}
	cur := make(map[string]string, len(problems))
	var out []winproxyv1alpha1.NodeProblem
	for _, p := range problems {
		cur[p.Name] = p.Reason
		if prev[p.Name] == p.Reason {
			continue
		}
		k := nodeReason{node: p.Name, reason: p.Reason}
		if _, recent := reported[k]; recent {
			continue
		}
		reported[k] = now
		out = append(out, p)
	}
	f.failing[config] = cur
	return out
}

// Forget drops what was remembered about a deleted config.
func (f *NodeFailures) Forget(config string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.failing, config)
	delete(f.reported, config)
}
