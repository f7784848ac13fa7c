package controllers

import (
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/configstatus"
)

// Event reasons (events.k8s.io, regarding the WindowsProxyConfig). A failing node's Warning has
// the node's own reason, one of the per-node reasons of api/v1alpha1 (e.g. FeatureGateDisabled),
// and a config that stalls for a reason no other event covers gets a Warning with the Stalled
// reason (e.g. AllNodesClaimed, InvalidNodeSelector, InvalidSpec). A rollback is a Warning
// RolledBack naming the nodes that failed, and a Normal RollbackCompleted once the nodes run the
// last good config.
const (
	eventRolloutStarted               = "RolloutStarted"
	eventRolloutCompleted             = "RolloutCompleted"
	eventRolloutCompletedWithFailures = "RolloutCompletedWithFailures"
	eventRolloutStalled               = "RolloutStalled"
	eventConflict                     = "Conflict"
	eventRolledBack                   = "RolledBack"
	eventRollbackCompleted            = "RollbackCompleted"
	// eventHeartbeatRestored is the Normal event of a node whose agent renews its heartbeat again
	// after the controller reported it lost or stuck (whose Warning has that reason).
	eventHeartbeatRestored = "HeartbeatRestored"
)

// Event actions: what the controller was doing.
const (
	actionRollout = "Rollout"
	actionSelect  = "Select"
	actionDecode  = "Decode"
)

// maxEventNote is the longest note events.k8s.io accepts, in bytes.
const maxEventNote = 1024

// nodeEventInterval is the least time between two Warnings about the same node failing for the
// same reason: a node that flaps between failing and recovering is reported once per interval.
const nodeEventInterval = 10 * time.Minute

// nodeFailures decides which failing nodes to report in a Warning Event: a node that starts
// failing, or fails for another reason, unless the same config, node and reason were reported
// less than nodeEventInterval ago. It is memory only; after a restart it takes the config's
// status.failingNodes as already reported, so a restart repeats at most the nodes beyond that
// bounded list.
type nodeFailures struct {
	mu sync.Mutex
	// failing is, by config, the reason each of its failing nodes fails for.
	failing map[string]map[string]string
	// reported is, by config, when each node and reason was last reported.
	reported map[string]map[nodeReason]time.Time
}

type nodeReason struct{ node, reason string }

// silentReasons are the failures of a node whose agent went silent; their end is reported too.
var silentReasons = map[string]bool{winproxyv1alpha1.ReasonHeartbeatLost: true, winproxyv1alpha1.ReasonSyncLoopStuck: true}

// restored returns the nodes of config whose agent was silent at the last report and is not now.
// Call it before report, which moves what it remembers to problems.
func (f *nodeFailures) restored(config string, listed, problems []winproxyv1alpha1.NodeProblem) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	prev, known := f.failing[config]
	if !known {
		prev = make(map[string]string, len(listed))
		for _, p := range listed {
			prev[p.Name] = p.Reason
		}
	}
	silentNow := map[string]bool{}
	for _, p := range problems {
		silentNow[p.Name] = silentReasons[p.Reason]
	}
	var out []string
	for name, reason := range prev {
		if silentReasons[reason] && !silentNow[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// report returns the problems of config to report now. listed is the config's
// status.failingNodes before this reconcile; problems are all its failing nodes now.
func (f *nodeFailures) report(config string, listed, problems []winproxyv1alpha1.NodeProblem, now time.Time) []winproxyv1alpha1.NodeProblem {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing == nil {
		f.failing, f.reported = map[string]map[string]string{}, map[string]map[nodeReason]time.Time{}
	}
	prev, known := f.failing[config]
	if !known {
		prev = make(map[string]string, len(listed))
		for _, p := range listed {
			prev[p.Name] = p.Reason
		}
	}
	reported := f.reported[config]
	if reported == nil {
		reported = map[nodeReason]time.Time{}
		f.reported[config] = reported
	}
	for k, t := range reported {
		if now.Sub(t) >= nodeEventInterval {
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

// forget drops what was remembered about a deleted config.
func (f *nodeFailures) forget(config string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.failing, config)
	delete(f.reported, config)
}

// recordNodeFailures records a Warning about cfg for each failing node nodeFailures lets through,
// related to the Node when it is known.
func (r *WindowsProxyConfigReconciler) recordNodeFailures(cfg *winproxyv1alpha1.WindowsProxyConfig, listed, problems []winproxyv1alpha1.NodeProblem, nodes []*corev1.Node) {
	if r.recorder == nil {
		return
	}
	byName := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	for _, name := range r.failures.restored(cfg.Name, listed, problems) {
		var related runtime.Object
		if n, ok := byName[name]; ok {
			related = n
		}
		r.recorder.Eventf(cfg, related, corev1.EventTypeNormal, eventHeartbeatRestored, actionRollout, "Node %s: the agent renews its heartbeat again", name)
	}
	for _, p := range r.failures.report(cfg.Name, listed, problems, r.clock.Now()) {
		var related runtime.Object
		if n, ok := byName[p.Name]; ok {
			related = n
		}
		r.recorder.Eventf(cfg, related, corev1.EventTypeWarning, p.Reason, actionRollout, "%s", configstatus.Truncate(fmt.Sprintf("Node %s: %s", p.Name, p.Message), maxEventNote))
	}
}

// stallEventReasons are the Stalled reasons that no other event reports: a rollout stall has its
// own event, and failing nodes (also behind InvalidFeatureGates and NodesUnresolvable) theirs.
var stallEventReasons = map[string]bool{
	winproxyv1alpha1.ReasonAllNodesClaimed:     true,
	winproxyv1alpha1.ReasonInvalidNodeSelector: true,
}

// emitEvents reports rollout, conflict and stall transitions between two statuses.
func (r *WindowsProxyConfigReconciler) emitEvents(before, after *winproxyv1alpha1.WindowsProxyConfig) {
	if r.recorder == nil {
		return
	}
	warn := func(reason, action, msg string) {
		r.recorder.Eventf(after, nil, corev1.EventTypeWarning, reason, action, "%s", configstatus.Truncate(msg, maxEventNote))
	}
	prevReason := ""
	if prev := meta.FindStatusCondition(before.Status.Conditions, winproxyv1alpha1.ConditionProgressing); prev != nil {
		prevReason = prev.Reason
	}
	if cur := meta.FindStatusCondition(after.Status.Conditions, winproxyv1alpha1.ConditionProgressing); cur != nil && cur.Reason != prevReason {
		switch cur.Reason {
		case winproxyv1alpha1.ReasonRollingOut:
			r.recorder.Eventf(after, nil, corev1.EventTypeNormal, eventRolloutStarted, actionRollout, "%s", configstatus.Truncate(cur.Message, maxEventNote))
		case winproxyv1alpha1.ReasonRolloutComplete:
			if prevReason == winproxyv1alpha1.ReasonRollingOut {
				r.recorder.Eventf(after, nil, corev1.EventTypeNormal, eventRolloutCompleted, actionRollout, "%s", configstatus.Truncate(cur.Message, maxEventNote))
			}
		case winproxyv1alpha1.ReasonRolloutCompleteWithFailures:
			if prevReason == winproxyv1alpha1.ReasonRollingOut || prevReason == winproxyv1alpha1.ReasonRolloutStalled {
				warn(eventRolloutCompletedWithFailures, actionRollout, cur.Message)
			}
		case winproxyv1alpha1.ReasonRolloutStalled:
			warn(eventRolloutStalled, actionRollout, cur.Message)
		}
	}
	prevRB := meta.FindStatusCondition(before.Status.Conditions, winproxyv1alpha1.ConditionRolledBack)
	switch rb := meta.FindStatusCondition(after.Status.Conditions, winproxyv1alpha1.ConditionRolledBack); {
	case rb == nil || rb.Status != metav1.ConditionTrue:
	case prevRB == nil || prevRB.Status != metav1.ConditionTrue:
		warn(eventRolledBack, actionRollout, rb.Message)
	case prevRB.Reason == winproxyv1alpha1.ReasonRollingBack && rb.Reason == winproxyv1alpha1.ReasonRollbackComplete:
		r.recorder.Eventf(after, nil, corev1.EventTypeNormal, eventRollbackCompleted, actionRollout, "%s", configstatus.Truncate(rb.Message, maxEventNote))
	}
	if !meta.IsStatusConditionTrue(before.Status.Conditions, winproxyv1alpha1.ConditionConflicted) &&
		meta.IsStatusConditionTrue(after.Status.Conditions, winproxyv1alpha1.ConditionConflicted) {
		warn(eventConflict, actionSelect, meta.FindStatusCondition(after.Status.Conditions, winproxyv1alpha1.ConditionConflicted).Message)
	}
	prevStall := meta.FindStatusCondition(before.Status.Conditions, winproxyv1alpha1.ConditionStalled)
	stall := meta.FindStatusCondition(after.Status.Conditions, winproxyv1alpha1.ConditionStalled)
	if stall != nil && stall.Status == metav1.ConditionTrue && stallEventReasons[stall.Reason] &&
		(prevStall == nil || prevStall.Status != metav1.ConditionTrue || prevStall.Reason != stall.Reason) {
		warn(stall.Reason, actionSelect, stall.Message)
	}
}
