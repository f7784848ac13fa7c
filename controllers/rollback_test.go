package controllers

import (
	"testing"

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
	if configHash(&base) != configHash(same) {
		t.Error("nodeSelector and rollout changed configHash: pausing or re-pacing a rollback would retry the failed config")
	}
	other := base.DeepCopy()
	other.Sync.PeriodSeconds = 60
	if configHash(&base) == configHash(other) {
		t.Error("a change of what the nodes run kept configHash: it would not supersede a rollback")
	}
}

func TestActiveRollback(t *testing.T) {
	good := *storedSpec.DeepCopy()
	bad := good.DeepCopy()
	bad.Sync.PeriodSeconds = 60
	rolledBack := func(mutate func(*winproxyv1alpha1.WindowsProxyConfig)) *winproxyv1alpha1.WindowsProxyConfig {
		c := &winproxyv1alpha1.WindowsProxyConfig{Spec: *bad.DeepCopy()}
		c.Spec.Rollout.AutoRollback = true
		c.Status.LastGood = &winproxyv1alpha1.LastGoodConfig{Generation: 1, Spec: good}
		c.Status.Rollback = &winproxyv1alpha1.RollbackStatus{Generation: 2, ConfigHash: configHash(bad)}
		if mutate != nil {
			mutate(c)
		}
		return c
	}
	tests := []struct {
		name   string
		cfg    *winproxyv1alpha1.WindowsProxyConfig
		active bool
	}{
		{name: "the failed spec", cfg: rolledBack(nil), active: true},
		{name: "paused", cfg: rolledBack(func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Rollout.Paused = true }), active: true},
		{name: "the spec changed", cfg: rolledBack(func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Sync.PeriodSeconds = 45 }), active: false},
		{name: "autoRollback turned off", cfg: rolledBack(func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Rollout.AutoRollback = false }), active: false},
		{name: "nothing rolled back", cfg: rolledBack(func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Status.Rollback = nil }), active: false},
	}
	for _, tt := range tests {
		if got := activeRollback(tt.cfg) != nil; got != tt.active {
			t.Errorf("%s: rollback active = %t, want %t", tt.name, got, tt.active)
		}
	}
}
