package rollback

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
)

// storedSpec is a config's spec as the apiserver stores it, defaults filled in.
var storedSpec = winproxyv1alpha1.WindowsProxyConfigSpec{
	Network: winproxyv1alpha1.NetworkSpec{Name: "cbr0", Type: winproxyv1alpha1.NetworkTypeL2Bridge},
	Sync:    winproxyv1alpha1.SyncSpec{PeriodSeconds: 30, MinPeriodSeconds: 1},
	Rollout: winproxyv1alpha1.RolloutSpec{ProgressDeadlineSeconds: 300},
}

func TestConfigHashIgnoresSelectionAndPace(t *testing.T) {
	base := *storedSpec.DeepCopy()
	same := base.DeepCopy()
	same.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}
	same.Rollout = winproxyv1alpha1.RolloutSpec{Paused: true, MaxUnavailable: ptr.To(intstr.FromString("50%")), ProgressDeadlineSeconds: 60, AutoRollback: true}
	if ConfigHash(&base) != ConfigHash(same) {
		t.Error("nodeSelector and rollout changed ConfigHash: pausing or re-pacing a rollback would retry the failed config")
	}
	other := base.DeepCopy()
	other.Sync.PeriodSeconds = 60
	if ConfigHash(&base) == ConfigHash(other) {
		t.Error("a change of what the nodes run kept ConfigHash: it would not supersede a rollback")
	}
}

// config is a config whose spec (sync period 60) followed a last good one (period 30), with
// autoRollback on and a rollback of the current spec recorded; mutate changes it.
func config(mutate func(*winproxyv1alpha1.WindowsProxyConfig)) *winproxyv1alpha1.WindowsProxyConfig {
	good := *storedSpec.DeepCopy()
	c := &winproxyv1alpha1.WindowsProxyConfig{Spec: *good.DeepCopy()}
	c.Generation = 2
	c.Spec.Sync.PeriodSeconds = 60
	c.Spec.Rollout.AutoRollback = true
	c.Status.LastGood = &winproxyv1alpha1.LastGoodConfig{Generation: 1, Spec: good}
	c.Status.Rollback = &winproxyv1alpha1.RollbackStatus{Generation: 2, ConfigHash: ConfigHash(&c.Spec)}
	if mutate != nil {
		mutate(c)
	}
	return c
}

func TestActiveAndPossible(t *testing.T) {
	noRollback := func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Status.Rollback = nil }
	cases := map[string]struct {
		cfg *winproxyv1alpha1.WindowsProxyConfig
		// active: the recorded rollback holds; possible: failing nodes would start one.
		active, possible bool
	}{
		"the failed spec":   {cfg: config(nil), active: true},
		"paused":            {cfg: config(func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Rollout.Paused = true }), active: true},
		"re-paced":          {cfg: config(func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Rollout.ProgressDeadlineSeconds = 60 }), active: true},
		"the spec changed":  {cfg: config(func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Sync.PeriodSeconds = 45 }), possible: true},
		"autoRollback off":  {cfg: config(func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Rollout.AutoRollback = false })},
		"nothing recorded":  {cfg: config(noRollback), possible: true},
		"no last good spec": {cfg: config(func(c *winproxyv1alpha1.WindowsProxyConfig) { noRollback(c); c.Status.LastGood = nil })},
		"the spec is the last good one": {cfg: config(func(c *winproxyv1alpha1.WindowsProxyConfig) {
			noRollback(c)
			c.Spec.Sync.PeriodSeconds = 30
		})},
		"the last good spec, paced otherwise": {cfg: config(func(c *winproxyv1alpha1.WindowsProxyConfig) {
			noRollback(c)
			c.Spec.Sync.PeriodSeconds = 30
			c.Spec.Rollout.Paused = true
		})},
	}
	for name, tc := range cases {
		if got := Active(tc.cfg) != nil; got != tc.active {
			t.Errorf("%s: rollback active = %t, want %t", name, got, tc.active)
		}
		if got := Possible(tc.cfg); got != tc.possible {
			t.Errorf("%s: rollback possible = %t, want %t", name, got, tc.possible)
		}
	}
}

func TestDecide(t *testing.T) {
	cfg := config(func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Status.Rollback = nil })
	failed := []winproxyv1alpha1.NodeProblem{{Name: "win-1", Reason: winproxyv1alpha1.ReasonNodeDegraded, Message: "m"}}
	now := time.Date(2026, 12, 1, 10, 0, 0, 500_000_000, time.UTC)
	want := &winproxyv1alpha1.RollbackStatus{
		Generation: 2, ConfigHash: ConfigHash(&cfg.Spec), FailedNodes: failed,
		// Whole seconds, as the apiserver stores them: a status written again compares equal.
		StartTime: metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)),
	}
	got := Decide(cfg, failed, now)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Decide (-want,+got):\n%s", diff)
	}
	cfg.Status.Rollback = got
	if Active(cfg) == nil {
		t.Error("the rollback just decided does not hold")
	}
}
