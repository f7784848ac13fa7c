// Package rollback decides automatic rollbacks (spec.rollout.autoRollback). The controller keeps,
// in status.lastGood, the last spec every node able to use it programmed. When nodes fail a new
// spec while it is rolled out (rollout.Failures), it records the decision in status.rollback and
// rolls the last good spec out instead, with the same pacing: a rollback is a rollout towards
// other hashes. Both live in status, so a restarted controller carries on where the last one was;
// the decision is written in a reconcile that moves no node, because once the failed nodes are
// back on the last good config nothing on them says the spec failed, and a controller that lost
// the decision would roll the failed spec out again.
//
// It is pure: what holds is read from the config alone, and the controller carries it out.
package rollback

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
)

// StartDelay is how soon the reconcile that decided a rollback is followed by the one that
// carries it out: right away, once the decision is in status.
const StartDelay = time.Millisecond

// ConfigHash identifies what a spec makes the nodes run: everything in it but nodeSelector (which
// nodes) and rollout (how fast). A rollback holds until the spec's ConfigHash changes, so pausing
// it, changing its pace or selecting other nodes does not retry the failed config.
func ConfigHash(spec *winproxyv1alpha1.WindowsProxyConfigSpec) string {
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

// Active is the rollback cfg's status records, if it still holds: autoRollback is on and the spec
// is still the one that failed.
func Active(cfg *winproxyv1alpha1.WindowsProxyConfig) *winproxyv1alpha1.RollbackStatus {
	rb := cfg.Status.Rollback
	if rb == nil || !cfg.Spec.Rollout.AutoRollback || cfg.Status.LastGood == nil || rb.ConfigHash != ConfigHash(&cfg.Spec) {
		return nil
	}
	return rb
}

// Possible reports whether failing nodes would make cfg roll back: autoRollback is on, nothing is
// rolled back yet (Active is nil), and a last good config other than the spec exists to return to.
func Possible(cfg *winproxyv1alpha1.WindowsProxyConfig) bool {
	lg := cfg.Status.LastGood
	return Active(cfg) == nil && cfg.Spec.Rollout.AutoRollback && lg != nil && ConfigHash(&lg.Spec) != ConfigHash(&cfg.Spec)
}

// Decide records the rollback of cfg's spec, which the nodes of failed failed, decided at now.
func Decide(cfg *winproxyv1alpha1.WindowsProxyConfig, failed []winproxyv1alpha1.NodeProblem, now time.Time) *winproxyv1alpha1.RollbackStatus {
	return &winproxyv1alpha1.RollbackStatus{
		Generation:  cfg.Generation,
		ConfigHash:  ConfigHash(&cfg.Spec),
		StartTime:   metav1.NewTime(now.Truncate(time.Second)),
		FailedNodes: failed,
	}
}
