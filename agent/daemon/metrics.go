package daemon

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/winproxy/winproxy/internal/version"
)

// Metrics are the agent's Prometheus metrics, all prefixed winproxy_agent_. The node is identified
// by the scrape target, never by a label, so every series stays bounded.
type Metrics struct {
	SyncDuration       prometheus.Histogram
	Syncs              *prometheus.CounterVec
	HNSCalls           *prometheus.CounterVec
	LoadBalancers      *prometheus.GaugeVec
	RemoteEndpoints    prometheus.Gauge
	DriftRepairs       *prometheus.CounterVec
	ForeignReplacement prometheus.Counter
	BuildInfo          *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		SyncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "winproxy_agent_sync_duration_seconds",
			Help:    "Time one sync took: reading HNS, computing the desired state and applying it.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}),
		Syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "winproxy_agent_syncs_total",
			Help: "Syncs by result: success, failed (some HNS calls failed), skipped (network or HNS not ready).",
		}, []string{"result"}),
		HNSCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "winproxy_agent_hns_calls_total",
			Help: "HNS calls by operation and result (ok, or the HNS error: port_already_exists, not_found, not_implemented, hns_not_running, ...).",
		}, []string{"operation", "result"}),
		LoadBalancers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "winproxy_agent_load_balancers",
			Help: "HNS load balancers by state: desired, programmed, failed.",
		}, []string{"state"}),
		RemoteEndpoints: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "winproxy_agent_remote_endpoints",
			Help: "Remote HNS endpoints the agent owns.",
		}),
		DriftRepairs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "winproxy_agent_drift_repairs_total",
			Help: "HNS objects found deleted or changed behind the agent's back and restored, by kind (loadbalancer, endpoint).",
		}, []string{"kind"}),
		ForeignReplacement: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "winproxy_agent_foreign_load_balancers_replaced_total",
			Help: "Load balancers not created by the agent that blocked one of its frontends and were replaced, as kube-proxy does.",
		}),
		BuildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "winproxy_agent_build_info",
			Help: "Always 1; the labels say which agent build runs.",
		}, []string{"version", "goversion"}),
	}
	reg.MustRegister(m.SyncDuration, m.Syncs, m.HNSCalls, m.LoadBalancers, m.RemoteEndpoints, m.DriftRepairs, m.ForeignReplacement, m.BuildInfo)
	m.BuildInfo.WithLabelValues(version.Version, runtime.Version()).Set(1)
	return m
}
