package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/configstatus"
	"github.com/winproxy/winproxy/controllers/rollout"
)

// Automatic rollback (spec.rollout.autoRollback). The controller keeps, in status.lastGood, the
// last spec every node able to use it programmed. When nodes fail a new spec while it is rolled
// out (rollout.Failures), it records the decision in status.rollback and rolls the last good spec
// out instead, with the same pacing: a rollback is a rollout towards other hashes. Both live in
// status, so a restarted controller carries on where the last one was; the decision is written in
// a reconcile that moves no node, because once the failed nodes are back on the last good config
// nothing on them says the spec failed, and a controller that lost the decision would roll the
// failed spec out again.

// rollbackStartDelay is how soon the reconcile that decided a rollback is followed by the one
// that carries it out: right away, once the decision is in status.
const rollbackStartDelay = time.Millisecond

// configHash identifies what a spec makes the nodes run: everything in it but nodeSelector (which
// nodes) and rollout (how fast). A rollback holds until the spec's configHash changes, so pausing
// it, changing its pace or selecting other nodes does not retry the failed config.
func configHash(spec *winproxyv1alpha1.WindowsProxyConfigSpec) string {
	s := spec.DeepCopy()
	s.NodeSelector = nil
	s.Rollout = winproxyv1alpha1.RolloutSpec{}
	b, err := json.Marshal(s)
	if err != nil {
		// A spec read from the apiserver always marshals.
		panic(fmt.Sprintf("marshalling a WindowsProxyConfig spec: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// activeRollback is the rollback cfg's status records, if it still holds: autoRollback is on and
// the spec is still the one that failed.
func activeRollback(cfg *winproxyv1alpha1.WindowsProxyConfig) *winproxyv1alpha1.RollbackStatus {
	rb := cfg.Status.Rollback
	if rb == nil || !cfg.Spec.Rollout.AutoRollback || cfg.Status.LastGood == nil || rb.ConfigHash != configHash(&cfg.Spec) {
		return nil
	}
	return rb
}

// mayRollBack reports whether failing nodes would make s's config roll back: autoRollback is on,
// nothing is rolled back yet, and a last good config other than the spec exists to return to.
func mayRollBack(s *scope) bool {
	lg := s.config.Status.LastGood
	return s.rollback == nil && s.config.Spec.Rollout.AutoRollback && lg != nil && configHash(&lg.Spec) != configHash(&s.config.Spec)
}

// startRollback decides the rollback of s's spec, which failures failed: the status this
// reconcile writes carries the decision, and the next reconcile moves the nodes.
func (r *WindowsProxyConfigReconciler) startRollback(ctx context.Context, s *scope, failures []rollout.Failure, opts rollout.Options, now time.Time) {
	cfg := s.config
	rb := &winproxyv1alpha1.RollbackStatus{
		Generation: cfg.Generation,
		ConfigHash: configHash(&cfg.Spec),
		StartTime:  metav1.NewTime(now.Truncate(time.Second)),
	}
	for _, f := range failures {
		if len(rb.FailedNodes) == configstatus.MaxListedNodes {
			break
		}
		v := r.view(s, f.Node)
		rb.FailedNodes = append(rb.FailedNodes, configstatus.FailureProblem(&v, cfg.Spec.Rollout.ProgressDeadlineSeconds))
	}
	ctrl.LoggerFrom(ctx).Info("Rolling back a config that nodes failed", "generation", cfg.Generation,
		"toGeneration", cfg.Status.LastGood.Generation, "failedNodes", configstatus.ProblemNames(rb.FailedNodes))
	s.rollback = rb
	s.target = r.resolveAll(ctx, &cfg.Status.LastGood.Spec, s.owned)
	s.plan = rollout.Compute(r.rolloutNodes(s), opts)
	s.plan.RequeueAfter = rollbackStartDelay
}
