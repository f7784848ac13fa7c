package controllers

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/configstatus"
	"github.com/winproxy/winproxy/controllers/rollback"
	"github.com/winproxy/winproxy/controllers/rollout"
)

// startRollback decides the rollback of s's spec, which failures failed (see package rollback):
// the status this reconcile writes carries the decision, and the next reconcile moves the nodes.
func (r *WindowsProxyConfigReconciler) startRollback(ctx context.Context, s *scope, failures []rollout.Failure, opts rollout.Options, now time.Time) {
	cfg := s.config
	var failed []winproxyv1alpha1.NodeProblem
	for _, f := range failures {
		if len(failed) == configstatus.MaxListedNodes {
			break
		}
		v := r.view(s, f.Node)
		failed = append(failed, configstatus.FailureProblem(&v, cfg.Spec.Rollout.ProgressDeadlineSeconds))
	}
	s.rollback = rollback.Decide(cfg, failed, now)
	ctrl.LoggerFrom(ctx).Info("Rolling back a config that nodes failed", "generation", cfg.Generation,
		"toGeneration", cfg.Status.LastGood.Generation, "failedNodes", configstatus.ProblemNames(failed))
	s.target = r.resolveAll(ctx, &cfg.Status.LastGood.Spec, s.owned)
	s.plan = rollout.Compute(r.rolloutNodes(s), opts)
	s.plan.RequeueAfter = rollback.StartDelay
}
