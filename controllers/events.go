package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/configevents"
)

// recordNodeFailures records the events of cfg's failing nodes that configevents lets through,
// related to the Node when it is known.
func (r *WindowsProxyConfigReconciler) recordNodeFailures(cfg *winproxyv1alpha1.WindowsProxyConfig, listed, problems []winproxyv1alpha1.NodeProblem, nodes []*corev1.Node) {
	if r.recorder == nil {
		return
	}
	byName := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	for _, e := range r.failures.Events(cfg.Name, listed, problems, r.clock.Now()) {
		var related runtime.Object
		if n, ok := byName[e.Node]; ok {
			related = n
		}
		r.recorder.Eventf(cfg, related, e.Type, e.Reason, e.Action, "%s", e.Note)
	}
}

// emitEvents records the rollout, rollback, conflict and stall transitions between two statuses.
func (r *WindowsProxyConfigReconciler) emitEvents(before, after *winproxyv1alpha1.WindowsProxyConfig) {
	if r.recorder == nil {
		return
	}
	for _, e := range configevents.Transitions(before.Status.Conditions, after.Status.Conditions) {
		r.recorder.Eventf(after, nil, e.Type, e.Reason, e.Action, "%s", e.Note)
	}
}
