//go:build !windows

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The values of issue #15's chart section: each is rendered as documented, refused with a clear
// message where it cannot work, and accepted by the apiserver's server-side dry run.

// valuesNamespace is where the dry runs of this file's renders go.
const valuesNamespace = "helm-values"

// monitoringAPIs make helm template render the Prometheus Operator objects, as a cluster with its
// CRDs does.
var monitoringAPIs = []string{
	"--api-versions", "monitoring.coreos.com/v1/ServiceMonitor",
	"--api-versions", "monitoring.coreos.com/v1/PodMonitor",
	"--api-versions", "monitoring.coreos.com/v1/PrometheusRule",
}

// render is helm template of the chart as release wpv in valuesNamespace.
func render(t *testing.T, args ...string) (string, []*unstructured.Unstructured) {
	t.Helper()
	out := helm(t, nil, append([]string{"template", "wpv", chartDir, "--namespace", valuesNamespace}, args...)...)
	return out, objects(t, out)
}

var (
	monitoringOnce sync.Once
	monitoringErr  error
)

// installMonitoringCRDs gives the shared control plane minimal monitoring.coreos.com/v1 CRDs
// (ServiceMonitor, PodMonitor, PrometheusRule; any content), so that the dry runs reach them, and
// the namespaces of the dry runs.
func installMonitoringCRDs(t *testing.T) {
	t.Helper()
	monitoringOnce.Do(func() {
		ctx := context.Background()
		// ci/everything-values.yaml puts the dashboards' ConfigMap in Grafana's namespace.
		for _, ns := range []string{valuesNamespace, "monitoring"} {
			if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
				monitoringErr = err
				return
			}
		}
		for _, kind := range []string{"ServiceMonitor", "PodMonitor", "PrometheusRule"} {
			crd := monitoringCRD(kind)
			if err := env.Client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
				monitoringErr = err
				return
			}
			if _, err := kubectlErr("wait", "--for=condition=Established", "--timeout=60s", "crd/"+crd.Name); err != nil {
				monitoringErr = err
				return
			}
		}
	})
	if monitoringErr != nil {
		t.Fatal(monitoringErr)
	}
}

func monitoringCRD(kind string) *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	singular := strings.ToLower(kind)
	plural := singular + "s"
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".monitoring.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "monitoring.coreos.com",
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: singular},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
}

// acceptedByAPIServer sends a rendered manifest to the shared control plane as a server-side
// dry-run apply: the apiserver validates every object (schemas, CEL, admission) and stores none.
func acceptedByAPIServer(t *testing.T, manifest string) {
	t.Helper()
	installMonitoringCRDs(t)
	f := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := kubectlErr("apply", "--server-side", "--dry-run=server", "--force-conflicts", "--field-manager=helm-values-test", "-f", f); err != nil {
		t.Fatalf("the apiserver refused the render: %v\n%s", err, out)
	}
}

func podSpec(t *testing.T, o *unstructured.Unstructured) map[string]any {
	t.Helper()
	spec, ok, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
	if !ok {
		spec, ok, _ = unstructured.NestedMap(o.Object, "spec")
	}
	if !ok {
		t.Fatalf("%s %s has no pod spec", o.GetKind(), o.GetName())
	}
	return spec
}

func container(t *testing.T, o *unstructured.Unstructured) map[string]any {
	t.Helper()
	return podSpec(t, o)["containers"].([]any)[0].(map[string]any)
}

func args(t *testing.T, o *unstructured.Unstructured) []string {
	t.Helper()
	a, _, _ := unstructured.NestedStringSlice(container(t, o), "args")
	return a
}

func nested(t *testing.T, m map[string]any, path ...string) any {
	t.Helper()
	v, _, err := unstructured.NestedFieldNoCopy(m, path...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkEqual compares as JSON, so that YAML's int64 and a test's int compare equal.
func checkEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("%s = %s, want %s", what, g, w)
	}
}

func TestHelmValuesImages(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name              string
		set               []string
		controller, agent string
	}{
		{"defaults: registry/repository:appVersion", nil, "ghcr.io/winproxy/winproxy-controller:0.1.0", "ghcr.io/winproxy/winproxy-agent:0.1.0"},
		{"registry and tag", []string{"controller.image.registry=registry.example.com:5000", "controller.image.tag=v1", "agent.image.registry=registry.example.com/mirror/"},
			"registry.example.com:5000/winproxy/winproxy-controller:v1", "registry.example.com/mirror/winproxy/winproxy-agent:0.1.0"},
		{"digest wins over the tag", []string{"controller.image.tag=v1", "controller.image.digest=" + digest, "agent.image.digest=" + digest},
			"ghcr.io/winproxy/winproxy-controller@" + digest, "ghcr.io/winproxy/winproxy-agent@" + digest},
		{"global.imageRegistry overrides both registries", []string{"global.imageRegistry=mirror.example.com", "controller.image.registry=registry.example.com"},
			"mirror.example.com/winproxy/winproxy-controller:0.1.0", "mirror.example.com/winproxy/winproxy-agent:0.1.0"},
		{"no registry: the repository alone", []string{"controller.image.registry=", "controller.image.repository=registry.example.com/wp/controller", "agent.image.registry=", "agent.image.repository=agent"},
			"registry.example.com/wp/controller:0.1.0", "agent:0.1.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var set []string
			for _, s := range tc.set {
				set = append(set, "--set", s)
			}
			manifest, objs := render(t, set...)
			checkEqual(t, "controller image", container(t, find(t, objs, "Deployment", "-controller"))["image"], tc.controller)
			checkEqual(t, "agent image", container(t, find(t, objs, "DaemonSet", "-agent"))["image"], tc.agent)
			// The test hook runs the controller image.
			checkEqual(t, "test hook image", container(t, find(t, objs, "Pod", "-self-test"))["image"], tc.controller)
			acceptedByAPIServer(t, manifest)
		})
	}
}

func TestHelmValuesSecurityContexts(t *testing.T) {
	// Overrides merge over the restricted defaults, which stay unless set to null.
	manifest, objs := render(t, "--set", "controller.podSecurityContext.runAsUser=65532", "--set", "controller.podSecurityContext.fsGroup=65532",
		"--set", "controller.securityContext.privileged=false")
	d := find(t, objs, "Deployment", "-controller")
	checkController(t, d)
	spec := podSpec(t, d)
	checkEqual(t, "controller pod securityContext", spec["securityContext"], map[string]any{
		"runAsNonRoot": true, "runAsUser": 65532, "fsGroup": 65532, "seccompProfile": map[string]any{"type": "RuntimeDefault"},
	})
	checkEqual(t, "controller container securityContext", container(t, d)["securityContext"], map[string]any{
		"allowPrivilegeEscalation": false, "privileged": false, "readOnlyRootFilesystem": true, "capabilities": map[string]any{"drop": []string{"ALL"}},
	})
	// The test hook runs with the controller's security contexts.
	hook := find(t, objs, "Pod", "-self-test")
	checkEqual(t, "test hook pod securityContext", podSpec(t, hook)["securityContext"], spec["securityContext"])
	checkEqual(t, "test hook container securityContext", container(t, hook)["securityContext"], container(t, d)["securityContext"])
	// The agent stays a HostProcess pod whatever is set.
	checkAgent(t, find(t, objs, "DaemonSet", "-agent"))
	acceptedByAPIServer(t, manifest)

	// null drops a default, e.g. for a platform that assigns the user itself.
	_, objs = render(t, "--set", "controller.podSecurityContext.runAsNonRoot=null")
	if _, ok := podSpec(t, find(t, objs, "Deployment", "-controller"))["securityContext"].(map[string]any)["runAsNonRoot"]; ok {
		t.Error("controller.podSecurityContext.runAsNonRoot=null did not drop runAsNonRoot")
	}
}

func TestHelmValuesControllerAvailability(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		// pdb is the PodDisruptionBudget's spec without the selector; nil: none rendered.
		pdb map[string]any
	}{
		{"one replica: no budget", nil, nil},
		{"two replicas: at most one down", []string{"controller.replicas=2"}, map[string]any{"maxUnavailable": 1}},
		{"minAvailable", []string{"controller.replicas=3", "controller.podDisruptionBudget.minAvailable=2"}, map[string]any{"minAvailable": 2}},
		{"maxUnavailable percent", []string{"controller.replicas=3", "controller.podDisruptionBudget.maxUnavailable=50%"}, map[string]any{"maxUnavailable": "50%"}},
		{"disabled", []string{"controller.replicas=2", "controller.podDisruptionBudget.enabled=false"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var set []string
			for _, s := range tc.set {
				set = append(set, "--set", s)
			}
			manifest, objs := render(t, set...)
			pdbs := ofKind(objs, "PodDisruptionBudget")
			if tc.pdb == nil {
				if len(pdbs) != 0 {
					t.Fatalf("want no PodDisruptionBudget, got %s", toYAML(pdbs[0].Object))
				}
				return
			}
			pdb := find(t, objs, "PodDisruptionBudget", "-controller")
			spec := pdb.Object["spec"].(map[string]any)
			checkEqual(t, "selector", spec["selector"], find(t, objs, "Deployment", "-controller").Object["spec"].(map[string]any)["selector"])
			delete(spec, "selector")
			checkEqual(t, "budget", spec, tc.pdb)
			acceptedByAPIServer(t, manifest)
		})
	}

	manifest, objs := render(t, "--set", "controller.revisionHistoryLimit=3", "--set", "agent.revisionHistoryLimit=4",
		"--set-json", `controller.topologySpreadConstraints=[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway"},{"maxSkew":2,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"tier":"control"}}}]`)
	d := find(t, objs, "Deployment", "-controller")
	checkEqual(t, "Deployment revisionHistoryLimit", nested(t, d.Object, "spec", "revisionHistoryLimit"), 3)
	checkEqual(t, "DaemonSet revisionHistoryLimit", nested(t, find(t, objs, "DaemonSet", "-agent").Object, "spec", "revisionHistoryLimit"), 4)
	checkEqual(t, "topologySpreadConstraints", podSpec(t, d)["topologySpreadConstraints"], []any{
		// Without a labelSelector a constraint counts the controller's pods.
		map[string]any{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
			"labelSelector": map[string]any{"matchLabels": nested(t, d.Object, "spec", "selector", "matchLabels")}},
		map[string]any{"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
			"labelSelector": map[string]any{"matchLabels": map[string]any{"tier": "control"}}},
	})
	acceptedByAPIServer(t, manifest)

	// The defaults are Kubernetes' own.
	_, objs = render(t)
	checkEqual(t, "default Deployment revisionHistoryLimit", nested(t, find(t, objs, "Deployment", "-controller").Object, "spec", "revisionHistoryLimit"), 10)
	if _, ok := podSpec(t, find(t, objs, "Deployment", "-controller"))["topologySpreadConstraints"]; ok {
		t.Error("topologySpreadConstraints rendered by default")
	}
}

func TestHelmValuesProbesAndLogs(t *testing.T) {
	manifest, objs := render(t,
		"--set", "controller.livenessProbe.initialDelaySeconds=1", "--set", "controller.livenessProbe.periodSeconds=2",
		"--set", "controller.livenessProbe.timeoutSeconds=3", "--set", "controller.livenessProbe.failureThreshold=4",
		"--set", "controller.readinessProbe.periodSeconds=7",
		"--set", "agent.livenessProbe.timeoutSeconds=9", "--set", "agent.readinessProbe.failureThreshold=6",
		"--set", "controller.logLevel=4", "--set", "controller.logFormat=json", "--set", "agent.logLevel=2")
	c := container(t, find(t, objs, "Deployment", "-controller"))
	a := container(t, find(t, objs, "DaemonSet", "-agent"))
	timing := func(p map[string]any) map[string]any {
		out := map[string]any{}
		for _, k := range []string{"initialDelaySeconds", "periodSeconds", "timeoutSeconds", "failureThreshold"} {
			out[k] = p[k]
		}
		return out
	}
	checkEqual(t, "controller livenessProbe", timing(c["livenessProbe"].(map[string]any)), map[string]any{"initialDelaySeconds": 1, "periodSeconds": 2, "timeoutSeconds": 3, "failureThreshold": 4})
	checkEqual(t, "controller readinessProbe", timing(c["readinessProbe"].(map[string]any)), map[string]any{"initialDelaySeconds": 5, "periodSeconds": 7, "timeoutSeconds": 1, "failureThreshold": 3})
	checkEqual(t, "agent livenessProbe", timing(a["livenessProbe"].(map[string]any)), map[string]any{"initialDelaySeconds": 15, "periodSeconds": 20, "timeoutSeconds": 9, "failureThreshold": 3})
	checkEqual(t, "agent readinessProbe", timing(a["readinessProbe"].(map[string]any)), map[string]any{"initialDelaySeconds": 5, "periodSeconds": 10, "timeoutSeconds": 1, "failureThreshold": 6})
	// The agent's probes still go to its own loopback port.
	checkEqual(t, "agent liveness host", nested(t, a, "livenessProbe", "httpGet", "host"), "127.0.0.1")
	for _, want := range []string{"--v=4", "--logging-format=json"} {
		if !contains(args(t, find(t, objs, "Deployment", "-controller")), want) {
			t.Errorf("controller args lack %s", want)
		}
	}
	for _, want := range []string{"--v=2", "--logging-format=text"} {
		if !contains(args(t, find(t, objs, "DaemonSet", "-agent")), want) {
			t.Errorf("agent args lack %s", want)
		}
	}
	acceptedByAPIServer(t, manifest)
}

// alertNames are the alerts the chart can render; the schema's prometheusRule.disabled enum must
// list exactly these.
var alertNames = []string{"WinproxyAgentNotSyncing", "WinproxyAgentSyncsFailing", "WinproxyProxyHealthzUnhealthy", "WinproxyAgentDown",
	"WinproxyNodesDegraded", "WinproxyRolloutStalled", "WinproxyConfigRolledBack", "WinproxyControllerDown"}

func TestHelmValuesMonitoring(t *testing.T) {
	all := []string{"--set", "controller.metrics.serviceMonitor.enabled=true", "--set", "agent.metrics.podMonitor.enabled=true",
		"--set", "agent.metrics.bindAddress=0.0.0.0", "--set", "prometheusRule.enabled=true"}

	// Without the monitoring CRDs nothing is rendered, and the NOTES say why.
	_, objs := render(t, all...)
	for _, kind := range []string{"ServiceMonitor", "PodMonitor", "PrometheusRule"} {
		if len(ofKind(objs, kind)) != 0 {
			t.Errorf("a %s was rendered for a cluster without its CRD", kind)
		}
	}
	notes := installNotes(t, all...)
	for _, kind := range []string{"ServiceMonitor", "PodMonitor", "PrometheusRule"} {
		if !strings.Contains(notes, "monitoring.coreos.com/v1 "+kind) {
			t.Errorf("NOTES do not warn that no %s was created:\n%s", kind, notes)
		}
	}
	// Off by default even when the CRDs exist.
	_, objs = render(t, monitoringAPIs...)
	for _, kind := range []string{"ServiceMonitor", "PodMonitor", "PrometheusRule"} {
		if len(ofKind(objs, kind)) != 0 {
			t.Errorf("a %s was rendered by default", kind)
		}
	}

	manifest, objs := render(t, append(slices.Clone(monitoringAPIs), append(all, "--set", "controller.metrics.serviceMonitor.labels.release=prom",
		"--set", "controller.metrics.serviceMonitor.interval=15s", "--set", "agent.metrics.podMonitor.scrapeTimeout=5s")...)...)
	sm := find(t, objs, "ServiceMonitor", "-controller")
	svc := find(t, objs, "Service", "-controller-metrics")
	checkEqual(t, "ServiceMonitor label release", sm.GetLabels()["release"], "prom")
	checkEqual(t, "ServiceMonitor namespaces", nested(t, sm.Object, "spec", "namespaceSelector", "matchNames"), []string{valuesNamespace})
	checkEqual(t, "ServiceMonitor selector", nested(t, sm.Object, "spec", "selector", "matchLabels"), nested(t, svc.Object, "spec", "selector"))
	for k, v := range nested(t, sm.Object, "spec", "selector", "matchLabels").(map[string]any) {
		if svc.GetLabels()[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%v, which the metrics Service lacks", k, v)
		}
	}
	checkEqual(t, "ServiceMonitor endpoints", nested(t, sm.Object, "spec", "endpoints"), []any{map[string]any{
		"port": nested(t, svc.Object, "spec", "ports").([]any)[0].(map[string]any)["name"], "path": "/metrics", "interval": "15s",
		"scheme": "https", "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
		"tlsConfig": map[string]any{"insecureSkipVerify": true},
	}})
	pm := find(t, objs, "PodMonitor", "-agent")
	checkEqual(t, "PodMonitor selector", nested(t, pm.Object, "spec", "selector", "matchLabels"), nested(t, find(t, objs, "DaemonSet", "-agent").Object, "spec", "selector", "matchLabels"))
	ep := nested(t, pm.Object, "spec", "podMetricsEndpoints").([]any)[0].(map[string]any)
	checkEqual(t, "PodMonitor port", ep["port"], "metrics")
	checkEqual(t, "PodMonitor scheme", ep["scheme"], "http")
	checkEqual(t, "PodMonitor scrapeTimeout", ep["scrapeTimeout"], "5s")
	if !strings.Contains(toYAML(ep["relabelings"]), "replacement: wpv-winproxy-agent") {
		t.Errorf("the PodMonitor does not set the job the alerts select:\n%s", toYAML(ep["relabelings"]))
	}
	checkAlerts(t, find(t, objs, "PrometheusRule", "wpv-winproxy"), alertNames)
	acceptedByAPIServer(t, manifest)

	// A CA instead of skipping verification; plain HTTP when the metrics are not secured.
	_, objs = render(t, append(slices.Clone(monitoringAPIs), "--set", "controller.metrics.serviceMonitor.enabled=true",
		"--set", "controller.metrics.certSecret=wp-metrics", "--set", "controller.metrics.serviceMonitor.ca.secret.name=wp-metrics",
		"--set", "controller.metrics.serviceMonitor.ca.secret.key=ca.crt")...)
	checkEqual(t, "tlsConfig with a CA", nested(t, find(t, objs, "ServiceMonitor", "-controller").Object, "spec", "endpoints").([]any)[0].(map[string]any)["tlsConfig"], map[string]any{
		"ca": map[string]any{"secret": map[string]any{"name": "wp-metrics", "key": "ca.crt"}}, "serverName": "wpv-winproxy-controller-metrics." + valuesNamespace + ".svc", "insecureSkipVerify": false,
	})
	d := find(t, objs, "Deployment", "-controller")
	if !contains(args(t, d), "--metrics-cert-path=/etc/winproxy/metrics-certs") {
		t.Errorf("certSecret does not pass --metrics-cert-path: %v", args(t, d))
	}
	checkEqual(t, "metrics certificate volume", podSpec(t, d)["volumes"], []any{map[string]any{"name": "metrics-certs", "secret": map[string]any{"secretName": "wp-metrics"}}})
	_, objs = render(t, append(slices.Clone(monitoringAPIs), "--set", "controller.metrics.serviceMonitor.enabled=true", "--set", "controller.metrics.secure=false")...)
	checkEqual(t, "insecure endpoint", nested(t, find(t, objs, "ServiceMonitor", "-controller").Object, "spec", "endpoints"), []any{map[string]any{"port": "http", "path": "/metrics", "scheme": "http"}})

	// Alerts can be turned off one by one and carry extra labels; without the chart's monitors the
	// "down" alerts (which need to know the scrape job) are left out.
	_, objs = render(t, append(slices.Clone(monitoringAPIs), "--set", "prometheusRule.enabled=true", "--set", "prometheusRule.disabled={WinproxyProxyHealthzUnhealthy}",
		"--set", "prometheusRule.alertLabels.team=net", "--set", "prometheusRule.agentSyncStaleSeconds=900")...)
	rule := find(t, objs, "PrometheusRule", "wpv-winproxy")
	checkAlerts(t, rule, []string{"WinproxyAgentNotSyncing", "WinproxyAgentSyncsFailing", "WinproxyNodesDegraded", "WinproxyRolloutStalled", "WinproxyConfigRolledBack"})
	for _, r := range ruleList(t, rule) {
		if r["labels"].(map[string]any)["team"] != "net" {
			t.Errorf("alert %v lacks the label team=net", r["alert"])
		}
		if r["alert"] == "WinproxyAgentNotSyncing" && !strings.Contains(r["expr"].(string), "> 900") {
			t.Errorf("agentSyncStaleSeconds=900 is not in the expression:\n%s", r["expr"])
		}
	}
}

func ruleList(t *testing.T, rule *unstructured.Unstructured) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, g := range nested(t, rule.Object, "spec", "groups").([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			out = append(out, r.(map[string]any))
		}
	}
	return out
}

// metricsTableName matches a metric's name in README.md's generated metrics table.
var metricsTableName = regexp.MustCompile("(?m)^\\| `([a-z_:]+)[{`]")

// checkAlerts checks the alerts' names, that every metric they read is one winproxy exports
// (README.md's generated table) or Prometheus's up, and that each says what to do.
func checkAlerts(t *testing.T, rule *unstructured.Unstructured, want []string) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(env.RepoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{"up": true}
	for _, m := range metricsTableName.FindAllStringSubmatch(string(readme), -1) {
		exported[m[1]] = true
	}
	if !exported["winproxy_agent_syncs_total"] {
		t.Fatal("README.md's metrics table not found")
	}
	series := regexp.MustCompile(`\b([a-z_:]+)\{`)
	var names []string
	for _, r := range ruleList(t, rule) {
		names = append(names, r["alert"].(string))
		expr := r["expr"].(string)
		for _, m := range series.FindAllStringSubmatch(expr, -1) {
			if !exported[m[1]] {
				t.Errorf("alert %s reads %s, which is not in README.md's metrics table", r["alert"], m[1])
			}
		}
		if strings.Count(expr, "(") != strings.Count(expr, ")") {
			t.Errorf("alert %s: unbalanced parentheses in\n%s", r["alert"], expr)
		}
		ann := r["annotations"].(map[string]any)
		if ann["summary"] == "" || ann["description"] == "" || ann["runbook_url"] == "" {
			t.Errorf("alert %s lacks a summary, description or runbook_url", r["alert"])
		}
		if r["labels"].(map[string]any)["severity"] == nil {
			t.Errorf("alert %s has no severity", r["alert"])
		}
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("alerts = %v, want %v", names, want)
	}
}

// The schema's list of alerts that can be disabled is the list the chart renders.
func TestHelmValuesAlertNamesInSchema(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(env.RepoRoot, chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			PrometheusRule struct {
				Properties struct {
					Disabled struct {
						Items struct {
							Enum []string `json:"enum"`
						} `json:"items"`
					} `json:"disabled"`
				} `json:"properties"`
			} `json:"prometheusRule"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(schema.Properties.PrometheusRule.Properties.Disabled.Items.Enum)
	want := slices.Clone(alertNames)
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("schema prometheusRule.disabled enum = %v, want the rendered alerts %v", got, want)
	}
}

func TestHelmValuesTestHook(t *testing.T) {
	manifest, objs := render(t)
	hooks := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetAnnotations()["helm.sh/hook"] == "test" {
			hooks[o.GetKind()] = o
			if p := o.GetAnnotations()["helm.sh/hook-delete-policy"]; p != "before-hook-creation,hook-succeeded" {
				t.Errorf("test hook %s %s has delete policy %q", o.GetKind(), o.GetName(), p)
			}
		}
	}
	var kinds []string
	for k := range hooks {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	if want := []string{"ClusterRole", "ClusterRoleBinding", "Pod", "Role", "RoleBinding", "ServiceAccount"}; !reflect.DeepEqual(kinds, want) {
		t.Fatalf("test hook kinds = %v, want %v", kinds, want)
	}
	pod := hooks["Pod"]
	checkEqual(t, "test pod restartPolicy", podSpec(t, pod)["restartPolicy"], "Never")
	checkEqual(t, "test pod service account", podSpec(t, pod)["serviceAccountName"], hooks["ServiceAccount"].GetName())
	checkEqual(t, "test pod command", container(t, pod)["command"], []string{"/winproxy-controller"})
	for _, want := range []string{"--self-test", "--self-test-namespace=" + valuesNamespace, "--self-test-deployment=" + find(t, objs, "Deployment", "-controller").GetName()} {
		if !contains(args(t, pod), want) {
			t.Errorf("test pod args %v lack %s", args(t, pod), want)
		}
	}
	// Least privilege: get on the controller Deployment, create on WindowsProxyConfigs.
	checkEqual(t, "test Role rules", hooks["Role"].Object["rules"], []any{map[string]any{
		"apiGroups": []string{"apps"}, "resources": []string{"deployments"}, "resourceNames": []string{find(t, objs, "Deployment", "-controller").GetName()}, "verbs": []string{"get"},
	}})
	checkEqual(t, "test ClusterRole rules", hooks["ClusterRole"].Object["rules"], []any{map[string]any{
		"apiGroups": []string{"winproxy.io"}, "resources": []string{"windowsproxyconfigs"}, "verbs": []string{"create"},
	}})
	// The hook is a restricted pod, like the controller.
	checkEqual(t, "test pod securityContext", podSpec(t, pod)["securityContext"], podSpec(t, find(t, objs, "Deployment", "-controller"))["securityContext"])
	acceptedByAPIServer(t, manifest)

	_, objs = render(t, "--set", "tests.enabled=false")
	for _, o := range objs {
		if _, ok := o.GetAnnotations()["helm.sh/hook"]; ok {
			t.Errorf("tests.enabled=false still renders the test hook's %s %s", o.GetKind(), o.GetName())
		}
	}
}

// The roles' names (each binding is named after its role and refers to it) and Helm's own labels,
// which the kustomize render (config/chart) sets and turns off.
func TestHelmValuesNamesAndHelmLabels(t *testing.T) {
	for _, tc := range []struct {
		set                               []string
		controller, leaderElection, agent string
	}{
		{nil, "wpv-winproxy-controller", "wpv-winproxy-leader-election", "wpv-winproxy-agent"},
		{[]string{"--set", "controller.rbac.clusterRoleName=c-role", "--set", "controller.leaderElection.roleName=le-role", "--set", "agent.rbac.clusterRoleName=a-role"}, "c-role", "le-role", "a-role"},
	} {
		_, objs := render(t, tc.set...)
		for _, want := range []struct{ kind, bindingKind, name string }{
			{"ClusterRole", "ClusterRoleBinding", tc.controller},
			{"Role", "RoleBinding", tc.leaderElection},
			{"ClusterRole", "ClusterRoleBinding", tc.agent},
		} {
			find(t, objs, want.kind, want.name)
			binding := find(t, objs, want.bindingKind, want.name)
			if ref, _, _ := unstructured.NestedString(binding.Object, "roleRef", "name"); binding.GetName() != want.name || ref != want.name {
				t.Errorf("%v: %s %s refers to %s %q, want %q", tc.set, want.bindingKind, binding.GetName(), want.kind, ref, want.name)
			}
		}
	}
	for _, tc := range []struct {
		helmLabels bool
		set        []string
	}{{true, nil}, {false, []string{"--set", "helmLabels=false"}}} {
		_, objs := render(t, tc.set...)
		for _, o := range objs {
			labels := o.GetLabels()
			if _, ok := labels["helm.sh/chart"]; ok != tc.helmLabels {
				t.Errorf("helmLabels=%t: %s %s has helm.sh/chart: %t", tc.helmLabels, o.GetKind(), o.GetName(), ok)
			}
			if (labels["app.kubernetes.io/managed-by"] == "Helm") != tc.helmLabels {
				t.Errorf("helmLabels=%t: %s %s has app.kubernetes.io/managed-by %q", tc.helmLabels, o.GetKind(), o.GetName(), labels["app.kubernetes.io/managed-by"])
			}
			if labels["app.kubernetes.io/part-of"] != "winproxy" {
				t.Errorf("helmLabels=%t: %s %s lost its app.kubernetes.io labels: %v", tc.helmLabels, o.GetKind(), o.GetName(), labels)
			}
		}
	}
}

// What the chart refuses, and that it says what to do.
func TestHelmValuesRefused(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		// The apiserver refuses a DaemonSet that may not take any agent down, or more than all.
		{[]string{"agent.updateStrategy.rollingUpdate.maxUnavailable=0"}, "/agent/updateStrategy/rollingUpdate/maxUnavailable': minimum: got 0, want 1"},
		{[]string{"agent.updateStrategy.rollingUpdate.maxUnavailable=0%"}, "'0%' does not match pattern"},
		{[]string{"agent.updateStrategy.rollingUpdate.maxUnavailable=101%"}, "'101%' does not match pattern"},
		{[]string{"agent.updateStrategy.rollingUpdate.maxUnavailable=1"}, ""},
		{[]string{"agent.updateStrategy.rollingUpdate.maxUnavailable=100%"}, ""},
		// Host ports the node already uses, and the agent's own two.
		{[]string{"agent.metrics.port=10249"}, "agent.metrics.port 10249 is the node's port of Windows kube-proxy's metrics"},
		{[]string{"agent.metrics.port=10250"}, "agent.metrics.port 10250 is the node's port of the kubelet's API"},
		{[]string{"agent.healthProbe.port=10256"}, "agent.healthProbe.port 10256 is the node's port of the proxy health server"},
		{[]string{"agent.healthProbe.port=10248"}, "agent.healthProbe.port 10248 is the node's port of the kubelet's healthz"},
		{[]string{"agent.healthProbe.port=10265"}, "agent.metrics.port and agent.healthProbe.port are both 10265"},
		{[]string{"controller.healthProbe.port=8443"}, "controller.metrics.port and controller.healthProbe.port are both 8443"},
		{[]string{"controller.healthProbe.port=8443", "controller.metrics.enabled=false"}, ""},
		{[]string{"controller.replicas=2", "controller.leaderElection.enabled=false"}, "controller.replicas is 2 but controller.leaderElection.enabled is false"},
		{[]string{"controller.podDisruptionBudget.minAvailable=1", "controller.podDisruptionBudget.maxUnavailable=1"}, "set minAvailable or maxUnavailable, not both"},
		// Prometheus cannot reach a loopback address.
		{[]string{"agent.metrics.podMonitor.enabled=true"}, "agent.metrics.podMonitor.enabled needs agent.metrics.bindAddress reachable by Prometheus, but it is 127.0.0.1"},
		{[]string{"agent.metrics.podMonitor.enabled=true", "agent.metrics.bindAddress=::1"}, "but it is ::1, the node's loopback"},
		{[]string{"agent.metrics.podMonitor.enabled=true", "agent.enabled=false", "agent.metrics.bindAddress=0.0.0.0"}, "agent.metrics.podMonitor.enabled needs agent.enabled"},
		{[]string{"controller.metrics.serviceMonitor.enabled=true", "controller.metrics.enabled=false"}, "controller.metrics.serviceMonitor.enabled needs controller.metrics.enabled"},
		// Images.
		{[]string{"controller.image.repository=registry.example.com/wp"}, `controller.image.repository "registry.example.com/wp" starts with a registry host`},
		{[]string{"global.imageRegistry=mirror.example.com", "agent.image.repository=localhost/wp"}, `agent.image.repository "localhost/wp" starts with a registry host, and the registry "mirror.example.com"`},
		{[]string{"agent.image.digest=latest"}, "/agent/image/digest': 'latest' does not match pattern"},
		// Enumerations and ranges.
		{[]string{"agent.logFormat=yaml"}, "/agent/logFormat': value must be one of 'text', 'json'"},
		{[]string{"controller.logLevel=-1"}, "/controller/logLevel': minimum: got -1, want 0"},
		{[]string{"agent.readinessProbe.timeoutSeconds=0"}, "/agent/readinessProbe/timeoutSeconds': minimum: got 0, want 1"},
		{[]string{"controller.livenessProbe.period=3"}, "additional properties 'period' not allowed"},
		{[]string{"controller.podDisruptionBudget.maxUnavailable=150%"}, "'150%' does not match pattern"},
		{[]string{"controller.revisionHistoryLimit=-1"}, "/controller/revisionHistoryLimit': minimum: got -1, want 0"},
		{[]string{"prometheusRule.disabled={WinproxyEverything}"}, "/prometheusRule/disabled/0': value must be one of"},
		{[]string{"prometheusRule.agentSyncStaleSeconds=10"}, "/prometheusRule/agentSyncStaleSeconds': minimum: got 10, want 60"},
		{[]string{"controller.metrics.serviceMonitor.interval=30sec"}, "/controller/metrics/serviceMonitor/interval': '30sec' does not match pattern"},
		{[]string{"tests.enable=true"}, "additional properties 'enable' not allowed"},
		{[]string{"controller.topologySpreadConstraints[0].maxSkew=1", "controller.topologySpreadConstraints[0].topologyKey=zone", "controller.topologySpreadConstraints[0].whenUnsatisfiable=Never"},
			"/controller/topologySpreadConstraints/0/whenUnsatisfiable': value must be one of 'DoNotSchedule', 'ScheduleAnyway'"},
		{[]string{"controller.topologySpreadConstraints[0].maxSkew=1"}, "/controller/topologySpreadConstraints/0': missing properties 'topologyKey', 'whenUnsatisfiable'"},
	} {
		var set []string
		for _, s := range tc.set {
			set = append(set, "--set", s)
		}
		_, err := helmOn(t, nil, append([]string{"template", "wpv", chartDir}, set...)...)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: refused, want accepted: %v", tc.set, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want one saying %q", tc.set, err, tc.want)
		}
	}
}

// Every ci/*-values.yaml, with the monitoring APIs, is accepted by the apiserver.
func TestHelmValuesCIFilesAcceptedByAPIServer(t *testing.T) {
	for _, f := range ciValues(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			manifest, objs := render(t, append(slices.Clone(monitoringAPIs), "-f", f)...)
			checkController(t, find(t, objs, "Deployment", "-controller"))
			if filepath.Base(f) == "everything-values.yaml" {
				for _, kind := range []string{"PodDisruptionBudget", "ServiceMonitor", "PodMonitor", "PrometheusRule", "Pod"} {
					if len(ofKind(objs, kind)) != 1 {
						t.Errorf("everything-values.yaml renders %d %s, want 1", len(ofKind(objs, kind)), kind)
					}
				}
			}
			acceptedByAPIServer(t, manifest)
		})
	}
}

// installNotes are the NOTES of a client-side dry-run install (no cluster).
func installNotes(t *testing.T, args ...string) string {
	t.Helper()
	out := helm(t, nil, append([]string{"install", "wpv", chartDir, "--namespace", valuesNamespace, "--dry-run=client"}, args...)...)
	_, notes, ok := strings.Cut(out, "\nNOTES:\n")
	if !ok {
		t.Fatalf("no NOTES in\n%s", out)
	}
	return notes
}

// The NOTES work for a user who installed from a chart repository: no paths into the source tree,
// and the example they give is a WindowsProxyConfig the apiserver accepts.
func TestHelmNotesWithoutSourceTree(t *testing.T) {
	for _, set := range [][]string{nil, {"--set", "crds.enabled=false"}, {"--set", "defaultConfig.enabled=true"}} {
		notes := installNotes(t, set...)
		for _, line := range strings.Split(notes, "\n") {
			if regexp.MustCompile(`(^|[\s(])(config/|docs/|hack/|make )`).MatchString(line) {
				t.Errorf("NOTES (%v) point into the source tree: %q", set, line)
			}
		}
	}
	notes := installNotes(t)
	_, example, ok := strings.Cut(notes, "kubectl apply -f - <<EOF\n")
	if ok {
		example, _, ok = strings.Cut(example, "     EOF\n")
	}
	if !ok {
		t.Fatalf("no WindowsProxyConfig example in the NOTES:\n%s", notes)
	}
	var lines []string
	for _, l := range strings.Split(example, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "     "))
	}
	f := filepath.Join(t.TempDir(), "example.yaml")
	if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := kubectlErr("create", "--dry-run=server", "-f", f); err != nil || !strings.Contains(out, "windowsproxyconfig.winproxy.io/default created (server dry run)") {
		t.Errorf("the NOTES' example is refused: %v\n%s\n%s", err, out, strings.Join(lines, "\n"))
	}
}

// The NOTES check the release namespace's Pod Security label, and render without a cluster.
func TestHelmNotesPodSecurity(t *testing.T) {
	ctx := context.Background()
	for ns, level := range map[string]string{"notes-privileged": "privileged", "notes-baseline": "baseline", "notes-unlabelled": ""} {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if level != "" {
			obj.Labels = map[string]string{"pod-security.kubernetes.io/enforce": level}
		}
		if err := env.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	notesOn := func(ns string, set ...string) string {
		t.Helper()
		// The shared control plane's CRDs are not the release's: crds.enabled=false, as rbac_test.go.
		out := helm(t, env, append([]string{"install", "notes", chartDir, "--namespace", ns, "--dry-run=server", "--set", "crds.enabled=false",
			"--set", "apiServer.host=api.winproxy.test", "--set", "apiServer.port=6443"}, set...)...)
		_, notes, _ := strings.Cut(out, "\nNOTES:\n")
		return notes
	}
	for _, tc := range []struct {
		ns, want string
	}{
		{"notes-privileged", ""},
		{"notes-baseline", `namespace notes-baseline enforces the "baseline" Pod Security level, which refuses`},
		{"notes-unlabelled", "namespace notes-unlabelled has no pod-security.kubernetes.io/enforce label"},
		{"notes-missing", "namespace notes-missing is created by this install without a Pod Security label"},
	} {
		notes := notesOn(tc.ns)
		if tc.want == "" {
			if strings.Contains(notes, "Pod Security") {
				t.Errorf("%s: NOTES warn about Pod Security although the namespace is privileged:\n%s", tc.ns, notes)
			}
		} else {
			if !strings.Contains(notes, tc.want) || !strings.Contains(notes, "pod-security.kubernetes.io/enforce=privileged") {
				t.Errorf("%s: NOTES lack %q and the command that fixes it:\n%s", tc.ns, tc.want, notes)
			}
		}
	}
	// Without agents, the namespace may be restricted.
	if notes := notesOn("notes-baseline", "--set", "agent.enabled=false"); strings.Contains(notes, "Pod Security") {
		t.Errorf("without agents the NOTES still warn about Pod Security:\n%s", notes)
	}
	// Without a cluster there is nothing to look up and nothing to warn about.
	if notes := installNotes(t); strings.Contains(notes, "Pod Security") {
		t.Errorf("NOTES rendered without a cluster warn about Pod Security:\n%s", notes)
	}
}

// docs/install.md's values table documents every value of values.yaml (a map value such as
// livenessProbe may be documented as a whole), and nothing else.
func TestHelmValuesDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(env.RepoRoot, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(doc), "\n### Values\n")
	table, _, _ = strings.Cut(table, "\n## ")
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-zA-Z0-9_.]+)` \\|").FindAllStringSubmatch(table, -1) {
		documented[m[1]] = true
	}
	b, err := os.ReadFile(filepath.Join(env.RepoRoot, chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	exists := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		exists[prefix] = true
		m, ok := v.(map[string]any)
		if documented[prefix] || !ok || len(m) == 0 {
			if !documented[prefix] {
				t.Errorf("value %s is not in docs/install.md's values table", prefix)
			}
			return
		}
		for k, sub := range m {
			walk(prefix+"."+k, sub)
		}
	}
	for k, v := range values {
		walk(k, v)
	}
	for k := range documented {
		if !exists[k] {
			t.Errorf("docs/install.md documents %s, which values.yaml does not have", k)
		}
	}
}
