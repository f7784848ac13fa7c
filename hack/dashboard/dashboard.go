package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// UID is the dashboard's uid, stable across releases so that links and bookmarks keep working.
const UID = "winproxy-overview"

// Selectors of the queries: the controller's series by config, the agents' by the Prometheus job
// that scrapes them and their node label (the chart's PodMonitor sets both), so that kube-proxy's
// own kubeproxy_* series of Linux nodes stay out.
const (
	byConfig = `config=~"$config"`
	byNode   = `job=~"$job", node=~"$node"`
)

// series is one query of a panel and its legend.
type series struct{ expr, legend string }

func build() (dashboard.Dashboard, error) {
	b := dashboard.NewDashboardBuilder("winproxy").
		Uid(UID).
		Description("Windows service proxying by winproxy: per WindowsProxyConfig, the nodes and their rollout; per node, what is in effect, sync and network-programming latency, HNS calls and failures, drift repairs, health-server answers and the agent's heartbeat.").
		Tags([]string{"winproxy", "kube-proxy", "windows"}).
		Refresh("30s").
		Time("now-1h", "now").
		Timezone(common.TimeZoneBrowser).
		Readonly().
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus")).
		WithVariable(queryVariable("job", "Agent job", "label_values(winproxy_agent_build_info, job)", false)).
		WithVariable(queryVariable("config", "Config", "label_values(winproxy_config_nodes, config)", true)).
		WithVariable(queryVariable("node", "Node", `label_values(winproxy_agent_build_info{job=~"$job"}, node)`, true))
	b = b.WithRow(dashboard.NewRowBuilder("Configs"))
	for _, p := range configPanels() {
		b = b.WithPanel(p)
	}
	b = b.WithRow(dashboard.NewRowBuilder("Nodes"))
	for _, p := range nodePanels() {
		b = b.WithPanel(p)
	}
	return b.Build()
}

func configPanels() []cog.Builder[dashboard.Panel] {
	nodes := func(state string) string {
		return `sum(max by (config) (winproxy_config_nodes{` + byConfig + `, state="` + state + `"}))`
	}
	return []cog.Builder[dashboard.Panel]{
		statPanel("Selected nodes", "Windows nodes the selected configs own.", nodes("selected")),
		statPanel("Programmed nodes", "Nodes that report Programmed for their config's current spec.", nodes("programmed")),
		statPanel("Degraded or refused nodes", "Nodes that report Degraded, or refused their config (it cannot be resolved there, e.g. a feature gate): the config's status.failingNodes names them.", nodes("degraded")),
		statPanel("Dual-stack downgraded nodes", "Nodes where dual-stack was asked for and only IPv4 is proxied (overlay networks, HNS older than 11.10).", nodes("dual_stack_downgraded")),
		graph("Nodes by state", "Per config: selected, updated (carry the current config), programmed, degraded (or refused), dual-stack downgraded.", "short",
			series{`max by (config, state) (winproxy_config_nodes{` + byConfig + `})`, "{{config}} {{state}}"}),
		graph("Rollout progress", "Per config, the share of its nodes that carry the current config.", "percentunit",
			series{`max by (config) (winproxy_config_nodes{` + byConfig + `, state="updated"}) / max by (config) (winproxy_config_nodes{` + byConfig + `, state="selected"} > 0)`, "{{config}}"}),
		graph("Rollout state", "1 while a config's rollout is under way, stalled by a failing node, or rolled back to the last good spec.", "short",
			series{`max by (config) (winproxy_rollout_in_progress{` + byConfig + `})`, "{{config}} rolling out"},
			series{`max by (config) (winproxy_rollout_stalled{` + byConfig + `})`, "{{config}} stalled"},
			series{`max by (config) (winproxy_config_rolled_back{` + byConfig + `})`, "{{config}} rolled back"}),
	}
}

func nodePanels() []cog.Builder[dashboard.Panel] {
	quantile := func(q, metric string) string {
		return `histogram_quantile(` + q + `, sum by (node, le) (rate(` + metric + `{` + byNode + `}[$__rate_interval])))`
	}
	failures := func(write string) series {
		return series{`sum by (node, lb_type, error) (increase(kubeproxy_sync_proxy_rules_winkernel_lb_` + write + `_failures_total{` + byNode + `}[$__rate_interval]))`, "{{node}} " + write + " {{lb_type}} {{error}}"}
	}
	return []cog.Builder[dashboard.Panel]{
		graph("In effect", "Per node, 1 while DSR is active on ClusterIP load balancers, the network is an overlay, or dual-stack was downgraded to IPv4.", "short",
			series{`max by (node) (winproxy_agent_dsr_active{` + byNode + `})`, "{{node}} DSR"},
			series{`max by (node) (winproxy_agent_overlay_network{` + byNode + `})`, "{{node}} overlay"},
			series{`max by (node) (winproxy_agent_dual_stack_downgraded{` + byNode + `})`, "{{node}} dual-stack downgraded"}),
		graph("Heartbeat age", "Seconds since the controller last saw each node's agent renew its heartbeat Lease; past --node-grace-period the node reports AgentAlive=False.", "s",
			series{`max by (config, node) (winproxy_node_heartbeat_age_seconds{` + byConfig + `, node=~"$node"})`, "{{config}} {{node}}"}),
		graph("Sync latency", "kube-proxy's SyncProxyRules latency: p50 and p99 per node.", "s",
			series{quantile("0.5", "kubeproxy_sync_proxy_rules_duration_seconds_bucket"), "{{node}} p50"},
			series{quantile("0.99", "kubeproxy_sync_proxy_rules_duration_seconds_bucket"), "{{node}} p99"}),
		graph("Network programming latency", "From an EndpointSlice's change to HNS programmed (kube-proxy's SLI): p50 and p99 per node.", "s",
			series{quantile("0.5", "kubeproxy_network_programming_duration_seconds_bucket"), "{{node}} p50"},
			series{quantile("0.99", "kubeproxy_network_programming_duration_seconds_bucket"), "{{node}} p99"}),
		graph("HNS calls by operation", "HNS calls per second, by operation.", "ops",
			series{`sum by (operation) (rate(winproxy_agent_hns_calls_total{` + byNode + `}[$__rate_interval]))`, "{{operation}}"}),
		graph("HNS failures by operation", "HNS calls that failed, per second, by operation and HNS error.", "ops",
			series{`sum by (operation, result) (rate(winproxy_agent_hns_calls_total{` + byNode + `, result!="ok"}[$__rate_interval]))`, "{{operation}} {{result}}"}),
		graph("Load-balancer write failures", "winkernel's counters: load-balancer creates, updates and deletes HNS refused, by kind and error.", "short",
			failures("create"), failures("update"), failures("delete")),
		graph("Syncs by result", "Syncs per second per node: success, failed (some HNS calls failed), skipped (network or HNS not ready).", "ops",
			series{`sum by (node, result) (rate(winproxy_agent_syncs_total{` + byNode + `}[$__rate_interval]))`, "{{node}} {{result}}"}),
		graph("Drift repairs", "HNS objects deleted or changed behind the agent's back and restored, by kind.", "short",
			series{`sum by (node, kind) (increase(winproxy_agent_drift_repairs_total{` + byNode + `}[$__rate_interval]))`, "{{node}} {{kind}}"}),
		graph("Health-server answers", "What the proxy health server answered load balancers' probes (/healthz, /livez), per second by HTTP code: 503 sends the node no traffic.", "ops",
			series{`sum by (node, code) (rate(kubeproxy_proxy_healthz_total{` + byNode + `}[$__rate_interval]))`, "{{node}} healthz {{code}}"},
			series{`sum by (node, code) (rate(kubeproxy_proxy_livez_total{` + byNode + `}[$__rate_interval]))`, "{{node}} livez {{code}}"}),
		graph("Load balancers", "HNS load balancers per node: desired, programmed, failed.", "short",
			series{`max by (node, state) (winproxy_agent_load_balancers{` + byNode + `})`, "{{node}} {{state}}"}),
	}
}

func queryVariable(name, label, query string, all bool) *dashboard.QueryVariableBuilder {
	v := dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(datasource()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(query)}).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc)
	if all {
		v = v.Multi(true).IncludeAll(true).AllValue(".*")
	}
	return v
}

func datasource() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}
}

func target(s series) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Expr(s.expr).LegendFormat(s.legend).Datasource(datasource())
}

func statPanel(title, description, expr string) *stat.PanelBuilder {
	return stat.NewPanelBuilder().Title(title).Description(description).Datasource(datasource()).
		Height(4).Span(6).Unit("short").Decimals(0).
		WithTarget(target(series{expr, title}))
}

func graph(title, description, unit string, ss ...series) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().Title(title).Description(description).Datasource(datasource()).
		Height(8).Span(12).Unit(unit).Min(0).
		Legend(common.NewVizLegendOptionsBuilder().ShowLegend(true).DisplayMode(common.LegendDisplayModeList).Placement(common.LegendPlacementBottom))
	for _, s := range ss {
		p = p.WithTarget(target(s))
	}
	return p
}
