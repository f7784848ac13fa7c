package daemon

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/winproxy/winproxy/agent/apply"
	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
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
	Disowned           prometheus.Counter
	BuildInfo          *prometheus.GaugeVec
	// DSRActive, Overlay and DualStackDowngraded say what is in effect on the node, as its
	// WindowsProxyNode status does, for dashboards that show it per node.
	DSRActive           prometheus.Gauge
	Overlay             prometheus.Gauge
	DualStackDowngraded prometheus.Gauge

	// KubeProxy are kube-proxy's SLIs under kube-proxy's names.
	KubeProxy KubeProxyMetrics
}

// KubeProxyMetrics are the SLIs Windows kube-proxy exports (k8s.io/kubernetes pkg/proxy/metrics),
// with the same names, labels, buckets and meaning, so that dashboards and alerts written for
// kube-proxy keep working on nodes where the agent replaced it. The agent programs both IP families
// in one sync, so per-family series of one sync share their values.
type KubeProxyMetrics struct {
	SyncProxyRulesLatency             *prometheus.HistogramVec
	SyncProxyRulesLastTimestamp       *prometheus.GaugeVec
	SyncProxyRulesLastQueuedTimestamp *prometheus.GaugeVec
	NetworkProgrammingLatency         *prometheus.HistogramVec
	EndpointChangesPending            prometheus.Gauge
	EndpointChangesTotal              prometheus.Counter
	ServiceChangesPending             prometheus.Gauge
	ServiceChangesTotal               prometheus.Counter
	ProxyHealthzTotal                 *prometheus.CounterVec
	ProxyLivezTotal                   *prometheus.CounterVec
	// LBCreateFailures, LBUpdateFailures and LBDeleteFailures are winkernel's own: the
	// load-balancer writes HNS refused, by ip_family, lb_type and error.
	LBCreateFailures *prometheus.CounterVec
	LBUpdateFailures *prometheus.CounterVec
	LBDeleteFailures *prometheus.CounterVec
}

func newKubeProxyMetrics() KubeProxyMetrics {
	const ns = "kubeproxy"
	return KubeProxyMetrics{
		SyncProxyRulesLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "sync_proxy_rules_duration_seconds",
			Help:    "SyncProxyRules latency in seconds",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"ip_family"}),
		SyncProxyRulesLastTimestamp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Name: "sync_proxy_rules_last_timestamp_seconds",
			Help: "The last time proxy rules were successfully synced",
		}, []string{"ip_family"}),
		SyncProxyRulesLastQueuedTimestamp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Name: "sync_proxy_rules_last_queued_timestamp_seconds",
			Help: "The last time a sync of proxy rules was queued",
		}, []string{"ip_family"}),
		NetworkProgrammingLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "network_programming_duration_seconds",
			Help:    "In Cluster Network Programming Latency in seconds",
			Buckets: networkProgrammingBuckets(),
		}, []string{"ip_family"}),
		EndpointChangesPending: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: ns, Name: "sync_proxy_rules_endpoint_changes_pending",
			Help: "Pending proxy rules Endpoint changes",
		}),
		EndpointChangesTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns, Name: "sync_proxy_rules_endpoint_changes_total",
			Help: "Cumulative proxy rules Endpoint changes",
		}),
		ServiceChangesPending: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: ns, Name: "sync_proxy_rules_service_changes_pending",
			Help: "Pending proxy rules Service changes",
		}),
		ServiceChangesTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns, Name: "sync_proxy_rules_service_changes_total",
			Help: "Cumulative proxy rules Service changes",
		}),
		ProxyHealthzTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "proxy_healthz_total",
			Help: "Cumulative proxy healthz HTTP status",
		}, []string{"code"}),
		ProxyLivezTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "proxy_livez_total",
			Help: "Cumulative proxy livez HTTP status",
		}, []string{"code"}),
		LBCreateFailures: lbFailureCounter("create"),
		LBUpdateFailures: lbFailureCounter("update"),
		LBDeleteFailures: lbFailureCounter("delete"),
	}
}

// lbFailureCounter is one of winkernel's load-balancer failure counters, e.g.
// kubeproxy_sync_proxy_rules_winkernel_lb_create_failures_total{ip_family,lb_type,error}.
func lbFailureCounter(write string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "kubeproxy", Name: "sync_proxy_rules_winkernel_lb_" + write + "_failures_total",
		Help: "Cumulative proxy winkernel lb " + write + " failures",
	}, []string{"ip_family", "lb_type", "error"})
}

// countLBFailure counts one refused load-balancer write as winkernel does: lb_type is
// winkernel's name of the load balancer's kind (unknown for one an earlier process recorded),
// error one of winkernel's five classes of HNS errors.
func (k KubeProxyMetrics) countLBFailure(f apply.LBFailure) {
	counter := k.LBCreateFailures
	switch f.Op {
	case hns.OpModifyLoadBalancer:
		counter = k.LBUpdateFailures
	case hns.OpDeleteLoadBalancer:
		counter = k.LBDeleteFailures
	}
	counter.WithLabelValues(f.Key.Family.String(), lbTypeLabel(f.Key.Kind), lbErrorLabel(f.Err)).Inc()
}

// lbTypeLabel is winkernel's lb_type of a load-balancer kind: the same names, but for
// ingress load balancers (ingressip).
func lbTypeLabel(k engine.Kind) string {
	switch k {
	case engine.KindIngress:
		return "ingressip"
	case 0:
		return "unknown"
	}
	return k.String()
}

// lbErrorLabel is winkernel's class of an HNS error (classifyLBError): four HCN errors by
// name, every other error "other".
func lbErrorLabel(err error) string {
	switch r := hns.Reason(err); r {
	case "network_not_found", "port_already_exists", "not_implemented", "invalid_ip":
		return r
	}
	return "other"
}

// networkProgrammingBuckets are kube-proxy's: 0.25 s steps to 0.5 s, then seconds to a minute,
// 5 s steps to 2 minutes and 30 s steps to 5 minutes.
func networkProgrammingBuckets() []float64 {
	b := prometheus.LinearBuckets(0.25, 0.25, 2)
	b = append(b, prometheus.LinearBuckets(1, 1, 59)...)
	b = append(b, prometheus.LinearBuckets(60, 5, 12)...)
	return append(b, prometheus.LinearBuckets(120, 30, 7)...)
}

func (k KubeProxyMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		k.SyncProxyRulesLatency, k.SyncProxyRulesLastTimestamp, k.SyncProxyRulesLastQueuedTimestamp,
		k.NetworkProgrammingLatency, k.EndpointChangesPending, k.EndpointChangesTotal,
		k.ServiceChangesPending, k.ServiceChangesTotal, k.ProxyHealthzTotal, k.ProxyLivezTotal,
		k.LBCreateFailures, k.LBUpdateFailures, k.LBDeleteFailures,
	}
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
			Help: "Syncs by result (success, failed: some HNS calls failed, skipped: network or HNS not ready), and how they read HNS and what they programmed: mode Changes (only what changed, from the agent's model of HNS), Recall (everything, from the model) or List (everything, from a list of HNS), with the reason (agent/syncmode).",
		}, []string{"result", "mode", "reason"}),
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
		Disowned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "winproxy_agent_load_balancers_disowned_total",
			Help: "Load balancers the agent had recorded as its own that no longer prove to be (changed behind its back), given up and left alone.",
		}),
		ForeignReplacement: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "winproxy_agent_foreign_load_balancers_replaced_total",
			Help: "Load balancers not created by the agent that blocked one of its frontends and were replaced, as kube-proxy does.",
		}),
		BuildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "winproxy_agent_build_info",
			Help: "Always 1; the labels say which agent build runs.",
		}, []string{"version", "goversion"}),
		DSRActive: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "winproxy_agent_dsr_active",
			Help: "1 while ClusterIP load balancers carry the DSR flag (DSRActive=True), else 0.",
		}),
		Overlay: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "winproxy_agent_overlay_network",
			Help: "1 while the HNS network the agent programs is an overlay (VXLAN) network, else 0.",
		}),
		DualStackDowngraded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "winproxy_agent_dual_stack_downgraded",
			Help: "1 while dual-stack was asked for and only IPv4 is proxied (DualStackDowngraded=True), else 0.",
		}),
		KubeProxy: newKubeProxyMetrics(),
	}
	reg.MustRegister(m.SyncDuration, m.Syncs, m.HNSCalls, m.LoadBalancers, m.RemoteEndpoints, m.DriftRepairs, m.ForeignReplacement, m.Disowned, m.BuildInfo,
		m.DSRActive, m.Overlay, m.DualStackDowngraded)
	reg.MustRegister(m.KubeProxy.collectors()...)
	m.BuildInfo.WithLabelValues(version.Version, runtime.Version()).Set(1)
	return m
}

// observeEffective records what a sync found in effect on the node.
func (m *Metrics) observeEffective(e engine.Effective) {
	m.DSRActive.Set(boolValue(e.DSRActive.True))
	m.Overlay.Set(boolValue(e.Network.Type == string(v1alpha1.NetworkTypeOverlay)))
	m.DualStackDowngraded.Set(boolValue(e.DualStackDowngraded.True))
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
