package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/version"
)

// Gauges exported on the manager's /metrics, beside controller-runtime's reconcile counts and
// durations (controller_runtime_reconcile_total{controller="windowsproxyconfig"}, ...). Labels
// are bounded by the number of configs.
var (
	configNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "winproxy_config_nodes",
		Help: "Nodes of a WindowsProxyConfig by state: selected, updated (carry the current config), programmed (report Programmed for it), degraded, dual_stack_downgraded, unreachable (the agent's heartbeat stopped).",
	}, []string{"config", "state"})
	rolloutInProgress = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "winproxy_rollout_in_progress",
		Help: "1 while a WindowsProxyConfig's rollout is under way (Progressing=True), else 0.",
	}, []string{"config"})
	rolloutStalled = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "winproxy_rollout_stalled",
		Help: "1 while a WindowsProxyConfig's rollout is stalled by a failing node (Progressing=False, reason RolloutStalled), else 0.",
	}, []string{"config"})
	configRolledBack = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "winproxy_config_rolled_back",
		Help: "1 while a WindowsProxyConfig's spec is rolled back to its last good config (RolledBack=True), else 0.",
	}, []string{"config"})
)

func init() {
	RegisterMetrics(metrics.Registry)
}

// RegisterMetrics registers the controller's metrics with reg. They join the manager's registry
// when the package loads; the README's metrics table is generated from what this registers.
func RegisterMetrics(reg prometheus.Registerer) {
	reg.MustRegister(configNodes, rolloutInProgress, rolloutStalled, configRolledBack, heartbeatAge, version.NewBuildInfo("winproxy_build_info"))
}

// recordMetrics publishes a config's status.
func recordMetrics(name string, st *winproxyv1alpha1.WindowsProxyConfigStatus) {
	for state, v := range map[string]int32{
		"selected":              st.Nodes.Selected,
		"updated":               st.Nodes.Updated,
		"programmed":            st.Nodes.Programmed,
		"degraded":              st.Nodes.Degraded,
		"dual_stack_downgraded": st.Nodes.DualStackDowngraded,
		"unreachable":           st.Nodes.Unreachable,
	} {
		configNodes.WithLabelValues(name, state).Set(float64(v))
	}
	var progressing, stalled, back float64
	for _, c := range st.Conditions {
		switch {
		case c.Type == winproxyv1alpha1.ConditionRolledBack && c.Status == metav1.ConditionTrue:
			back = 1
		case c.Type != winproxyv1alpha1.ConditionProgressing:
		case c.Status == metav1.ConditionTrue:
			progressing = 1
		case c.Reason == winproxyv1alpha1.ReasonRolloutStalled:
			stalled = 1
		}
	}
	rolloutInProgress.WithLabelValues(name).Set(progressing)
	rolloutStalled.WithLabelValues(name).Set(stalled)
	configRolledBack.WithLabelValues(name).Set(back)
}

// forgetMetrics removes a deleted config's series.
func forgetMetrics(name string) {
	configNodes.DeletePartialMatch(prometheus.Labels{"config": name})
	rolloutInProgress.DeleteLabelValues(name)
	rolloutStalled.DeleteLabelValues(name)
	configRolledBack.DeleteLabelValues(name)
}
