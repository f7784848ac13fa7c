//go:build !windows

// Package monitoring proves winproxy's monitoring against a real Prometheus (server and promtool
// built from source, `make prometheus-tools`): the server scrapes the real agents and controller
// on loopback and answers every query of the shipped dashboard, every alert of the chart's
// PrometheusRule and every panel query of kubernetes-mixin's kube-proxy dashboard; promtool checks
// the rules and runs their unit tests.
package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/featuregate"
	"github.com/winproxy/winproxy/internal/fleet"
	"github.com/winproxy/winproxy/internal/testenv"
)

// healthSubnet is the loopback subnet of this test's agents' health servers (fleet.Node.LoopbackIP);
// the end-to-end tests and the demo use others.
const healthSubnet = 3

// The scenario: the demo's fleet, its sample config with every node Ready, one load balancer
// deleted behind an agent's back (a drift repair and its Warning event), one EndpointSlice change
// stamped as the EndpointSlice controller does (network-programming latency), and every node's
// proxy health server probed as a cloud load balancer would. Prometheus scrapes the three agents
// and the controller every second; every query must return series where the scenario makes them.
func TestQueriesAgainstPrometheus(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bins := prometheusBinaries(t, root)
	groups := chartRules(t, root)
	var queries []query
	queries = append(queries, dashboardQueries(t, root)...)
	queries = append(queries, ruleQueries(groups)...)
	queries = append(queries, mixinQueries()...)

	s := startScenario(t)
	queries = s.heartbeatExpected(t, queries)
	prom := startPrometheus(t, bins, s, groups)
	prom.waitScraped(t, len(s.agents)+1)
	s.exercise(t)
	// Twenty scrapes of every target, so that every rate() window holds two samples or more.
	prom.waitSamples(t, `count_over_time(up{job="`+agentJob+`"}[1m])`, 20)

	var failed []string
	for _, q := range queries {
		n, err := prom.count(q.expr)
		switch {
		case err != nil:
			failed = append(failed, fmt.Sprintf("%s %q: %v\n    %s", q.source, q.name, err, q.expr))
		case n == 0 && q.none == "":
			failed = append(failed, fmt.Sprintf("%s %q: no series, but the scenario makes them\n    %s", q.source, q.name, q.expr))
		case n == 0:
			t.Logf("%-18s %-55s no series (%s)", q.source, q.name, q.none)
		default:
			t.Logf("%-18s %-55s %d series", q.source, q.name, n)
		}
	}
	if len(failed) > 0 {
		t.Errorf("%d of %d queries failed against Prometheus:\n%s", len(failed), len(queries), strings.Join(failed, "\n"))
	}
	// The scenario is healthy: Prometheus, which evaluates the chart's rules every second, has no
	// alert firing or pending.
	if alerts := prom.alerts(t); len(alerts) > 0 {
		t.Errorf("alerts in the healthy scenario: %v", alerts)
	}
	s.checkDebugEndpoints(t)
}

// scenario is the running fleet.
type scenario struct {
	env        *testenv.Env
	dir        string
	hosts      map[string]string
	agents     map[string]*fleet.Process
	controller *fleet.Process
	// controllerMetrics is the controller's plain-HTTP metrics address.
	controllerMetrics string
}

func startScenario(t *testing.T) *scenario {
	t.Helper()
	ctx := context.Background()
	e, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	s := &scenario{env: e, dir: t.TempDir(), hosts: map[string]string{}, agents: map[string]*fleet.Process{}}
	binDir := filepath.Join(s.dir, "bin")
	if err := fleet.Build(ctx, e.RepoRoot, binDir); err != nil {
		t.Fatal(err)
	}
	if err := fleet.CreateNodes(ctx, e.Client, fleet.Nodes); err != nil {
		t.Fatal(err)
	}
	if err := fleet.CreateWorkloads(ctx, e.Client); err != nil {
		t.Fatal(err)
	}
	s.controllerMetrics = freeAddr(t)
	if s.controller, err = fleet.StartController(binDir, e.Kubeconfig, s.dir, "--metrics-bind-address", s.controllerMetrics, "--metrics-secure=false"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.controller.Stop)
	for _, n := range fleet.Nodes {
		if !n.Windows {
			continue
		}
		s.hosts[n.Name] = filepath.Join(s.dir, n.Name+".hns.json")
		if err := fleet.SeedHost(s.hosts[n.Name], n, fleet.Nodes); err != nil {
			t.Fatal(err)
		}
		if _, _, err := fleet.SyncPods(ctx, e.Client, s.hosts[n.Name], n); err != nil {
			t.Fatal(err)
		}
		a, err := fleet.StartAgent(binDir, s.dir, s.hosts[n.Name], n, fleet.AgentOptions{Kubeconfig: e.Kubeconfig, HealthIP: n.LoopbackIP(healthSubnet)})
		if err != nil {
			t.Fatal(err)
		}
		s.agents[n.Name] = a
		t.Cleanup(a.Stop)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller log:\n%s", s.controller.Tail(30))
			for name, a := range s.agents {
				t.Logf("agent %s log:\n%s", name, a.Tail(30))
			}
		}
	})
	s.applyConfig(t)
	return s
}

// applyConfig applies the demo's sample with what its 1.32 node needs (the WinDSR gate) and a
// two-second sync period, and waits until every node programmed it.
func (s *scenario) applyConfig(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.env.RepoRoot, "config", "samples", "calico-overlay-dsr.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	wpc := &v1alpha1.WindowsProxyConfig{}
	if err := yaml.Unmarshal(data, wpc); err != nil {
		t.Fatal(err)
	}
	wpc.Spec.FeatureGates = map[string]bool{featuregate.WinDSR: true}
	wpc.Spec.Sync.PeriodSeconds = 2
	if err := s.env.Client.Create(context.Background(), wpc); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, func() error {
		got := &v1alpha1.WindowsProxyConfig{}
		if err := s.env.Client.Get(context.Background(), client.ObjectKeyFromObject(wpc), got); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != got.Generation {
			return fmt.Errorf("config not Ready: %+v", got.Status.Nodes)
		}
		return nil
	})
}

// exercise makes what the panels show: a drift repair, a network-programming latency, and the
// health servers' answers.
func (s *scenario) exercise(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	node, _ := fleet.Find("win-2022")
	agent := s.agents[node.Name]
	h, err := fleet.OpenHost(s.hosts[node.Name], node)
	if err != nil {
		t.Fatal(err)
	}
	st, err := h.Snapshot()
	if err == nil && len(st.LoadBalancers) > 0 {
		err = h.DeleteLoadBalancer(ctx, st.LoadBalancers[0].ID)
	}
	h.Close()
	if err != nil {
		t.Fatalf("deleting a load balancer behind the agent's back: %v", err)
	}
	testenv.Eventually(t, time.Minute, func() error {
		if n, err := agent.Metric("winproxy_agent_drift_repairs_total", `kind="loadbalancer"`); err != nil || n == 0 {
			return fmt.Errorf("no drift repair on %s yet (%w)", node.Name, err)
		}
		return nil
	})

	// The EndpointSlice controller stamps a change with its trigger time; the agents time from it
	// to HNS programmed (kube-proxy's network-programming SLI). The change is one of web's pods
	// starting to terminate: an update that changes nothing the agents read (a label, the trigger
	// time alone) syncs nothing and, as with kube-proxy, is not timed.
	slice := &discoveryv1.EndpointSlice{}
	key := client.ObjectKey{Namespace: fleet.Namespace, Name: fleet.SliceName("web")}
	if err := s.env.Client.Get(ctx, key, slice); err != nil {
		t.Fatal(err)
	}
	if slice.Annotations == nil {
		slice.Annotations = map[string]string{}
	}
	slice.Annotations["endpoints.kubernetes.io/last-change-trigger-time"] = time.Now().Format(time.RFC3339Nano)
	slice.Endpoints[0].Conditions = discoveryv1.EndpointConditions{Ready: new(false), Serving: new(true), Terminating: new(true)}
	if err := s.env.Client.Update(ctx, slice); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() error {
		for name, a := range s.agents {
			if n, err := a.Metric("kubeproxy_network_programming_duration_seconds_count"); err != nil || n == 0 {
				return fmt.Errorf("no network-programming latency on %s yet (%w)", name, err)
			}
		}
		return nil
	})

	for name, a := range s.agents {
		for _, path := range []string{"/healthz", "/livez"} {
			resp, err := http.Get("http://" + net.JoinHostPort(a.HealthIP, fmt.Sprint(v1alpha1.DefaultHealthCheckPort)) + path)
			if err != nil {
				t.Fatalf("probing %s's proxy health server: %v", name, err)
			}
			resp.Body.Close()
		}
	}
}

// heartbeatExpected expects heartbeat ages from a controller that exports them: the family
// arrived with the agents' heartbeat Leases; before it, the dashboard's panel stays empty.
func (s *scenario) heartbeatExpected(t *testing.T, qs []query) []query {
	t.Helper()
	var body string
	testenv.Eventually(t, time.Minute, func() error {
		var code int
		code, body = get(t, "http://"+s.controllerMetrics+"/metrics")
		if code != http.StatusOK {
			return fmt.Errorf("controller /metrics: %d", code)
		}
		return nil
	})
	if strings.Contains(body, "# HELP winproxy_node_heartbeat_age_seconds ") {
		return qs
	}
	for i := range qs {
		if strings.Contains(qs[i].expr, "winproxy_node_heartbeat_age_seconds") {
			qs[i].none = "this controller does not export winproxy_node_heartbeat_age_seconds"
		}
	}
	return qs
}

// checkDebugEndpoints asks one agent what kube-proxy answers on its metrics port.
func (s *scenario) checkDebugEndpoints(t *testing.T) {
	t.Helper()
	base := strings.TrimSuffix(s.agents["win-2025"].MetricsURL, "/metrics")
	// /flagz and /statusz pick their separator at random from ":", ": ", "=" and " " on purpose
	// (they are not meant to be parsed), so the pattern accepts each of the four.
	for path, want := range map[string]*regexp.Regexp{
		"/healthz":   regexp.MustCompile(`^ok$`),
		"/proxyMode": regexp.MustCompile(`^kernelspace$`),
		"/configz":   regexp.MustCompile(`"config": "calico-overlay-dsr"`),
		"/flagz":     regexp.MustCompile(`hns-sim-profile(:|: |=| )ws2025`),
		"/statusz":   regexp.MustCompile(`winproxy-agent statusz`),
	} {
		code, body := get(t, base+path)
		if code != http.StatusOK || !want.MatchString(body) {
			t.Errorf("GET %s: %d, want 200 matching %s:\n%s", path, code, want, body)
		}
	}
	// The structured page, as `kubectl get --raw` and kube-proxy's dashboards ask for it.
	req, err := http.NewRequest(http.MethodGet, base+"/statusz", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Statusz;v=v1beta1;g=config.k8s.io")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var statusz struct {
		Kind  string   `json:"kind"`
		Paths []string `json:"paths"`
	}
	err = json.NewDecoder(resp.Body).Decode(&statusz)
	resp.Body.Close()
	if wantPaths := []string{"/configz", "/flagz", "/healthz", "/metrics", "/proxyMode", "/statusz"}; err != nil || statusz.Kind != "Statusz" || !slices.Equal(statusz.Paths, wantPaths) {
		t.Errorf("GET /statusz as a Statusz: %+v (%v), want kind Statusz and paths %v", statusz, err, wantPaths)
	}
	if code, _ := get(t, base+"/debug/pprof/"); code == http.StatusOK {
		t.Error("pprof answers without --profiling")
	}
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// prometheusBinaries is the directory of the built prometheus and promtool: PROMETHEUS_BIN_DIR
// (the Makefile's), or the newest bin/prometheus/<version>.
func prometheusBinaries(t *testing.T, root string) string {
	t.Helper()
	dir := os.Getenv("PROMETHEUS_BIN_DIR")
	if dir == "" {
		found, _ := filepath.Glob(filepath.Join(root, "bin", "prometheus", "*", "prometheus"))
		if len(found) > 0 {
			dir = filepath.Dir(found[len(found)-1])
		}
	}
	for _, b := range []string{"prometheus", "promtool"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil || dir == "" {
			t.Fatalf("no %s in %q: run 'make prometheus-tools' (it builds them from source, pinned in hack/tools/prometheus)", b, dir)
		}
	}
	return dir
}

// promServer is a running Prometheus.
type promServer struct {
	url string
	cmd *exec.Cmd
	log string
}

// startPrometheus runs Prometheus with the chart's rules, scraping the agents under the agent job
// (with the node, namespace and pod labels the chart's PodMonitor gives them) and the controller
// under the controller's, every second.
func startPrometheus(t *testing.T, bins string, s *scenario, groups ruleGroups) *promServer {
	t.Helper()
	dir := t.TempDir()
	rules, err := yaml.Marshal(groups)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "rules.yaml"), rules)
	var agents []map[string]any
	for name, a := range s.agents {
		u, _ := url.Parse(a.MetricsURL)
		agents = append(agents, map[string]any{"targets": []string{u.Host}, "labels": map[string]string{
			"node": name, "namespace": releaseNamespace, "pod": "winproxy-agent-" + name, "cluster": clusterName}})
	}
	cfg := map[string]any{
		"global":     map[string]any{"scrape_interval": "1s", "evaluation_interval": "1s"},
		"rule_files": []string{"rules.yaml"},
		"scrape_configs": []map[string]any{
			{"job_name": agentJob, "static_configs": agents},
			{"job_name": controllerJob, "static_configs": []map[string]any{{"targets": []string{s.controllerMetrics},
				"labels": map[string]string{"namespace": releaseNamespace, "cluster": clusterName}}}},
		},
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "prometheus.yml"), data)
	check := exec.Command(filepath.Join(bins, "promtool"), "check", "config", filepath.Join(dir, "prometheus.yml"))
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
	addr := freeAddr(t)
	p := &promServer{url: "http://" + addr, log: filepath.Join(dir, "prometheus.log")}
	logFile, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(filepath.Join(bins, "prometheus"), "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		logFile.Close()
		if t.Failed() {
			data, _ := os.ReadFile(p.log)
			t.Logf("prometheus log (tail):\n%s", tail(string(data), 20))
		}
	})
	return p
}

// waitScraped waits until Prometheus scrapes every target successfully.
func (p *promServer) waitScraped(t *testing.T, targets int) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func() error {
		n, err := p.count(`up == 1`)
		if err != nil || n < targets {
			return fmt.Errorf("%d of %d targets up (%w)", n, targets, err)
		}
		return nil
	})
}

// waitSamples waits until the query's first value reaches want.
func (p *promServer) waitSamples(t *testing.T, expr string, want float64) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func() error {
		r, err := p.query(expr)
		if err != nil || len(r) == 0 {
			return fmt.Errorf("%s: %w", expr, err)
		}
		var v float64
		_, _ = fmt.Sscan(r[0].Value[1].(string), &v)
		if v < want {
			return fmt.Errorf("%s = %v, waiting for %v", expr, v, want)
		}
		return nil
	})
}

type sample struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
}

// query evaluates an instant query at the latest time.
func (p *promServer) query(expr string) ([]sample, error) {
	resp, err := http.PostForm(p.url+"/api/v1/query", url.Values{"query": {expr}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Status    string `json:"status"`
		Error     string `json:"error"`
		ErrorType string `json:"errorType"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	if out.Status != "success" {
		return nil, fmt.Errorf("%s: %s", out.ErrorType, out.Error)
	}
	if out.Data.ResultType != "vector" {
		return nil, fmt.Errorf("result type %s, want vector", out.Data.ResultType)
	}
	var r []sample
	return r, json.Unmarshal(out.Data.Result, &r)
}

func (p *promServer) count(expr string) (int, error) {
	r, err := p.query(expr)
	return len(r), err
}

// alerts are the alerts Prometheus has pending or firing, by name.
func (p *promServer) alerts(t *testing.T) []string {
	t.Helper()
	resp, err := http.Get(p.url + "/api/v1/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range out.Data.Alerts {
		names = append(names, a.Labels["alertname"]+" ("+a.State+")")
	}
	return names
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
