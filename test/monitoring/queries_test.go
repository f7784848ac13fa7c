//go:build !windows

package monitoring

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// query is one PromQL expression a user's monitoring evaluates, and what the test scenario makes
// of it.
type query struct {
	// source and name say where the query comes from: the dashboard's panel, the PrometheusRule's
	// alert, kubernetes-mixin's panel.
	source, name string
	expr         string
	// none says why the scenario makes no series for the query; empty means it must return some.
	none string
}

// Jobs and labels of the test's Prometheus: the chart's defaults (release "winproxy"), which its
// PodMonitor and ServiceMonitor set and its alerts select, and a cluster label as a multi-cluster
// Prometheus has.
const (
	agentJob      = "winproxy-agent"
	controllerJob = "winproxy-controller-metrics"
	clusterName   = "test"
	// releaseNamespace is the namespace the chart's monitors put on the series.
	releaseNamespace = "winproxy-system"
)

// dashboardFile is the dashboard the chart ships.
const dashboardFile = "charts/winproxy/files/dashboards/winproxy.json"

// noHNSFailures is why the queries of HNS failures return nothing: no HNS call fails in the
// scenario. The agent's unit tests (agent/apply, agent/daemon) feed these counters.
const noHNSFailures = "no HNS call fails in the scenario"

// dashboardNone are the dashboard's panels the scenario makes no series for, by title.
var dashboardNone = map[string]string{
	"HNS failures by operation":    noHNSFailures,
	"Load-balancer write failures": noHNSFailures,
}

// dashboardQueries are every query of the shipped dashboard, its variables' included, with the
// variables as Grafana fills them in: every config and node of the agents' job.
func dashboardQueries(t *testing.T, root string) []query {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr, LegendFormat string
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name, Type string
				Query      any
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	fill := strings.NewReplacer("$job", agentJob, "$config", ".*", "$node", ".*", "$__rate_interval", "1m")
	var out []query
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		out = append(out, query{source: "dashboard variable", name: v.Name, expr: fill.Replace(labelValues(t, q))})
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, query{source: "dashboard panel", name: p.Title + ": " + tg.LegendFormat, expr: fill.Replace(tg.Expr), none: dashboardNone[p.Title]})
		}
	}
	if len(out) < 20 {
		t.Fatalf("%s has %d queries; the dashboard lost its panels?", dashboardFile, len(out))
	}
	return out
}

// labelValuesRE is Grafana's label_values(SERIES, LABEL).
var labelValuesRE = regexp.MustCompile(`^label_values\((.+), *(\w+)\)$`)

// labelValues is the PromQL of a variable's label_values: the label's values of the series.
func labelValues(t *testing.T, q string) string {
	m := labelValuesRE.FindStringSubmatch(q)
	if m == nil {
		t.Fatalf("dashboard variable query %q is not label_values(series, label)", q)
	}
	return "count by (" + m[2] + ") (" + m[1] + ")"
}

// rule is one alert of the chart's PrometheusRule.
type rule struct {
	Alert  string            `json:"alert"`
	Expr   string            `json:"expr"`
	For    string            `json:"for,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	Annots map[string]string `json:"annotations,omitempty"`
}

// ruleGroups are the chart's PrometheusRule groups, rendered as Prometheus loads them.
type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

// chartRules renders the chart's PrometheusRule with the PodMonitor and ServiceMonitor it
// selects, as an admin who enables monitoring installs it, and returns its groups.
func chartRules(t *testing.T, root string) ruleGroups {
	t.Helper()
	helm := os.Getenv("HELM")
	if helm == "" {
		found, _ := filepath.Glob(filepath.Join(root, "bin", "helm-v*"))
		if len(found) == 0 {
			t.Fatal("no helm: set HELM or run 'make helm'")
		}
		helm = found[len(found)-1]
	}
	cmd := exec.Command(helm, "template", "winproxy", filepath.Join(root, "charts", "winproxy"), "--namespace", "winproxy-system",
		"--api-versions", "monitoring.coreos.com/v1/PrometheusRule", "--api-versions", "monitoring.coreos.com/v1/PodMonitor",
		"--api-versions", "monitoring.coreos.com/v1/ServiceMonitor", "--show-only", "templates/monitoring.yaml",
		"--set", "prometheusRule.enabled=true", "--set", "agent.metrics.podMonitor.enabled=true",
		"--set", "agent.metrics.bindAddress=0.0.0.0", "--set", "controller.metrics.serviceMonitor.enabled=true")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var obj struct {
			Kind string     `json:"kind"`
			Spec ruleGroups `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("helm template output: %v", err)
		}
		if obj.Kind == "PrometheusRule" {
			if len(obj.Spec.Groups) == 0 || len(obj.Spec.Groups[0].Rules) < 8 {
				t.Fatalf("the chart's PrometheusRule has lost alerts: %+v", obj.Spec)
			}
			return obj.Spec
		}
	}
	t.Fatal("the chart rendered no PrometheusRule")
	return ruleGroups{}
}

// ruleQueries are the expressions of every alert. In the healthy scenario every alert is silent,
// so the expressions return nothing; what the test evaluates is their operand without the
// threshold, which must find the series the alert watches.
func ruleQueries(g ruleGroups) []query {
	var out []query
	for _, grp := range g.Groups {
		for _, r := range grp.Rules {
			out = append(out, query{source: "alert", name: r.Alert, expr: r.Expr, none: "the scenario is healthy: the alert is silent"})
			if operand, ok := alertOperands[r.Alert]; ok {
				out = append(out, query{source: "alert operand", name: r.Alert, expr: operand})
			}
		}
	}
	return out
}

// alertOperands are the series each alert compares with its threshold, in the chart's default
// selectors.
var alertOperands = map[string]string{
	"WinproxyAgentNotSyncing":       `time() - max by (namespace, pod, node) (kubeproxy_sync_proxy_rules_last_timestamp_seconds{job="` + agentJob + `"})`,
	"WinproxyAgentSyncsFailing":     `sum by (namespace, pod, node) (rate(winproxy_agent_syncs_total{job="` + agentJob + `"}[10m]))`,
	"WinproxyProxyHealthzUnhealthy": `sum by (namespace, pod, node) (rate(kubeproxy_proxy_healthz_total{job="` + agentJob + `"}[5m]))`,
	"WinproxyAgentDown":             `up{job="` + agentJob + `"} == 1`,
	"WinproxyNodesDegraded":         `max by (namespace, config) (winproxy_config_nodes{job="` + controllerJob + `",state="degraded"})`,
	"WinproxyRolloutStalled":        `max by (namespace, config) (winproxy_rollout_stalled{job="` + controllerJob + `"})`,
	"WinproxyConfigRolledBack":      `max by (namespace, config) (winproxy_config_rolled_back{job="` + controllerJob + `"})`,
	"WinproxyControllerDown":        `up{job="` + controllerJob + `"} == 1`,
}

// mixinSelector is what kubernetes-mixin's kubeProxySelector is set to for winproxy's agents
// (README, "Monitoring"): their job.
const mixinSelector = `cluster="` + clusterName + `", job="` + agentJob + `"`

// mixinQueries are the panel queries of kubernetes-mixin's "Kubernetes / Proxy" dashboard
// (dashboards/proxy.libsonnet), every one of which applies to Windows nodes, with its
// kubeProxySelector pointed at the agents, $cluster and $instance filled in.
func mixinQueries() []query {
	sel := mixinSelector + `, instance=~".*"`
	var out []query
	add := func(name, expr string) { out = append(out, query{source: "kubernetes-mixin", name: name, expr: expr}) }
	add("Up", `sum(up{`+mixinSelector+`})`)
	add("Rules Sync Rate", `sum(rate(kubeproxy_sync_proxy_rules_duration_seconds_count{`+sel+`}[5m]))`)
	add("Rule Sync Latency 99th Quantile", `histogram_quantile(0.99,rate(kubeproxy_sync_proxy_rules_duration_seconds_bucket{`+sel+`}[5m]))`)
	add("Network Programming Rate", `sum(rate(kubeproxy_network_programming_duration_seconds_count{`+sel+`}[5m]))`)
	add("Network Programming Latency 99th Quantile", `histogram_quantile(0.99, sum(rate(kubeproxy_network_programming_duration_seconds_bucket{`+sel+`}[5m])) by (instance, le))`)
	for _, code := range []string{"2", "3", "4", "5"} {
		add("Kube API Request Rate "+code+"xx", `sum(rate(rest_client_requests_total{`+sel+`,code=~"`+code+`.."}[5m]))`)
	}
	add("Post Request Latency 99th Quantile", `histogram_quantile(0.99, sum(rate(rest_client_request_duration_seconds_bucket{`+sel+`,verb="POST"}[5m])) by (verb, url, le))`)
	add("Get Request Latency 99th Quantile", `histogram_quantile(0.99, sum(rate(rest_client_request_duration_seconds_bucket{`+sel+`, verb="GET"}[5m])) by (verb, url, le))`)
	add("Memory", `process_resident_memory_bytes{`+sel+`}`)
	add("CPU usage", `rate(process_cpu_seconds_total{`+sel+`}[5m])`)
	add("Goroutines", `go_goroutines{`+sel+`}`)
	add("variable instance", `count by (instance) (kubeproxy_network_programming_duration_seconds_bucket{`+mixinSelector+`})`)
	// sum(rate(...)) of a counter no request has reached is an empty result, as for kube-proxy.
	for i := range out {
		switch out[i].name {
		case "Kube API Request Rate 3xx":
			out[i].none = "the API server sends the agents no redirects"
		case "Kube API Request Rate 5xx":
			out[i].none = "the API server answers the agents no server errors in the scenario"
		}
	}
	return out
}
