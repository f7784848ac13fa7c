//go:build !windows

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/internal/testenv"
)

// ciValues are the chart's ci/*-values.yaml files, the value sets CI renders besides the defaults.
func ciValues(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(env.RepoRoot, chartDir, "ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no %s/ci/*-values.yaml: %v", chartDir, err)
	}
	return files
}

func TestHelmLintStrict(t *testing.T) {
	helm(t, nil, "lint", "--strict", chartDir)
	for _, f := range ciValues(t) {
		helm(t, nil, "lint", "--strict", chartDir, "-f", f)
	}
}

func TestHelmTemplateRendersEveryValueSet(t *testing.T) {
	sets := map[string][]string{"defaults": nil}
	for _, f := range ciValues(t) {
		sets[filepath.Base(f)] = []string{"-f", f}
	}
	for name, args := range sets {
		t.Run(name, func(t *testing.T) {
			objs := objects(t, helm(t, nil, append([]string{"template", "wp", chartDir, "--namespace", "winproxy-system"}, args...)...))
			if len(ofKind(objs, "Deployment")) != 1 || len(ofKind(objs, "DaemonSet")) != 1 {
				t.Errorf("want one Deployment and one DaemonSet, got %d and %d", len(ofKind(objs, "Deployment")), len(ofKind(objs, "DaemonSet")))
			}
			checkController(t, find(t, objs, "Deployment", "-controller"))
			checkAgent(t, find(t, objs, "DaemonSet", "-agent"))
		})
	}
}

// checkController checks what any values must keep: Linux, the restricted Pod Security Standard, probes.
func checkController(t *testing.T, d *unstructured.Unstructured) {
	t.Helper()
	spec := d.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	if os, _, _ := unstructured.NestedString(spec, "nodeSelector", "kubernetes.io/os"); os != "linux" {
		t.Errorf("controller nodeSelector kubernetes.io/os = %q, want linux", os)
	}
	if v, _, _ := unstructured.NestedBool(spec, "securityContext", "runAsNonRoot"); !v {
		t.Error("controller pod does not set runAsNonRoot")
	}
	if v, _, _ := unstructured.NestedString(spec, "securityContext", "seccompProfile", "type"); v != "RuntimeDefault" {
		t.Errorf("controller seccompProfile = %q, want RuntimeDefault", v)
	}
	c := spec["containers"].([]any)[0].(map[string]any)
	if v, _, _ := unstructured.NestedBool(c, "securityContext", "allowPrivilegeEscalation"); v {
		t.Error("controller container allows privilege escalation")
	}
	if drop, _, _ := unstructured.NestedStringSlice(c, "securityContext", "capabilities", "drop"); !reflect.DeepEqual(drop, []string{"ALL"}) {
		t.Errorf("controller drops capabilities %v, want [ALL]", drop)
	}
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		if _, ok := c[probe]; !ok {
			t.Errorf("controller has no %s", probe)
		}
	}
}

// checkAgent checks what any values must keep: a Windows HostProcess pod in the host network, its
// node from the downward API, the binary under the sandbox mount point, rolling updates.
func checkAgent(t *testing.T, ds *unstructured.Unstructured) {
	t.Helper()
	spec := ds.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	if os, _, _ := unstructured.NestedString(spec, "nodeSelector", "kubernetes.io/os"); os != "windows" {
		t.Errorf("agent nodeSelector kubernetes.io/os = %q, want windows", os)
	}
	if v, _, _ := unstructured.NestedBool(spec, "hostNetwork"); !v {
		t.Error("agent is not in the host network")
	}
	if v, _, _ := unstructured.NestedBool(spec, "securityContext", "windowsOptions", "hostProcess"); !v {
		t.Error("agent is not a HostProcess pod")
	}
	if v, _, _ := unstructured.NestedString(spec, "securityContext", "windowsOptions", "runAsUserName"); !strings.HasPrefix(v, `NT AUTHORITY\`) {
		t.Errorf("agent runAsUserName = %q, want an NT AUTHORITY account", v)
	}
	if v, _, _ := unstructured.NestedString(ds.Object, "spec", "updateStrategy", "type"); v != "RollingUpdate" {
		t.Errorf("agent updateStrategy = %q, want RollingUpdate", v)
	}
	c := spec["containers"].([]any)[0].(map[string]any)
	cmd, _, _ := unstructured.NestedStringSlice(c, "command")
	if len(cmd) != 1 || !strings.HasPrefix(cmd[0], "$env:CONTAINER_SANDBOX_MOUNT_POINT") {
		t.Errorf("agent command = %v, want the binary under CONTAINER_SANDBOX_MOUNT_POINT", cmd)
	}
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	if len(args) == 0 || args[0] != "run" || !contains(args, "--node-name=$(NODE_NAME)") {
		t.Errorf("agent args = %v, want run --node-name=$(NODE_NAME) ...", args)
	}
	envs, _, _ := unstructured.NestedSlice(c, "env")
	var fromDownwardAPI bool
	for _, e := range envs {
		if p, _, _ := unstructured.NestedString(e.(map[string]any), "valueFrom", "fieldRef", "fieldPath"); e.(map[string]any)["name"] == "NODE_NAME" && p == "spec.nodeName" {
			fromDownwardAPI = true
		}
	}
	if !fromDownwardAPI {
		t.Error("agent NODE_NAME does not come from spec.nodeName")
	}
}

func TestHelmDefaultsAreTheDocumentedOnes(t *testing.T) {
	objs := objects(t, helm(t, nil, "template", "winproxy", chartDir, "--namespace", "winproxy-system"))
	ds := find(t, objs, "DaemonSet", "winproxy-agent")
	spec := ds.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	if v, _, _ := unstructured.NestedString(spec, "securityContext", "windowsOptions", "runAsUserName"); v != `NT AUTHORITY\SYSTEM` {
		t.Errorf("agent runs as %q by default, want NT AUTHORITY\\SYSTEM", v)
	}
	if v, _, _ := unstructured.NestedString(spec, "priorityClassName"); v != "system-node-critical" {
		t.Errorf("agent priorityClassName = %q, want system-node-critical", v)
	}
	tol, _, _ := unstructured.NestedSlice(spec, "tolerations")
	if !reflect.DeepEqual(tol, []any{map[string]any{"operator": "Exists"}}) {
		t.Errorf("agent tolerations = %v, want to tolerate every taint", tol)
	}
	args, _, _ := unstructured.NestedStringSlice(spec["containers"].([]any)[0].(map[string]any), "args")
	for _, want := range []string{"--hns=windows", "--metrics-bind-address=127.0.0.1:10265", "--health-probe-bind-address=127.0.0.1:10266", "--healthz-bind-address=0.0.0.0", "--v=0", "--logging-format=text"} {
		if !contains(args, want) {
			t.Errorf("agent args %v lack %s", args, want)
		}
	}
	c := find(t, objs, "Deployment", "winproxy-controller").Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	cargs, _, _ := unstructured.NestedStringSlice(c, "args")
	for _, want := range []string{"--leader-elect", "--metrics-bind-address=:8443", "--metrics-secure=true", "--health-probe-bind-address=:8081", "--v=0", "--logging-format=text"} {
		if !contains(cargs, want) {
			t.Errorf("controller args %v lack %s", cargs, want)
		}
	}
	if img := c["image"]; !strings.HasSuffix(img.(string), ":"+chartAppVersion(t)) {
		t.Errorf("controller image %v is not tagged with the chart's appVersion %s", img, chartAppVersion(t))
	}
}

// The agents' API server address: the values when set, nothing without a cluster to ask
// (template), and both values or neither.
func TestHelmAPIServerEndpoint(t *testing.T) {
	objs := objects(t, helm(t, nil, "template", "wp", chartDir, "--set", "apiServer.host=api.winproxy.test", "--set", "apiServer.port=443"))
	cm := find(t, objs, "ConfigMap", "-apiserver-endpoint")
	if host, _, _ := unstructured.NestedString(cm.Object, "data", "KUBERNETES_SERVICE_HOST"); host != "api.winproxy.test" {
		t.Errorf("KUBERNETES_SERVICE_HOST = %q, want api.winproxy.test", host)
	}
	if port, _, _ := unstructured.NestedString(cm.Object, "data", "KUBERNETES_SERVICE_PORT"); port != "443" {
		t.Errorf("KUBERNETES_SERVICE_PORT = %q, want 443", port)
	}
	ds := find(t, objs, "DaemonSet", "-agent")
	envFrom, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "containers")
	if ref, _, _ := unstructured.NestedString(envFrom[0].(map[string]any)["envFrom"].([]any)[0].(map[string]any), "configMapRef", "name"); ref != cm.GetName() {
		t.Errorf("the agent reads its environment from ConfigMap %q, want %q", ref, cm.GetName())
	}
	if objs := objects(t, helm(t, nil, "template", "wp", chartDir)); len(ofKind(objs, "ConfigMap")) != 0 {
		t.Error("without a cluster to ask and without values, a ConfigMap was rendered")
	}
	for _, set := range []string{"apiServer.host=api.winproxy.test", "apiServer.port=6443"} {
		if _, err := helmOn(t, nil, "template", "wp", chartDir, "--set", set); err == nil || !strings.Contains(err.Error(), "is required with") {
			t.Errorf("--set %s alone: %v, want an error asking for the other value", set, err)
		}
	}
}

func chartAppVersion(t *testing.T) string {
	t.Helper()
	out := helm(t, nil, "show", "chart", chartDir)
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "appVersion: "); ok {
			return strings.Trim(v, `"'`)
		}
	}
	t.Fatalf("no appVersion in\n%s", out)
	return ""
}

// The chart's CRDs are config/crd/bases plus the chart's labels and, with crds.keep, the keep policy.
func TestHelmCRDsAreTheGeneratedOnes(t *testing.T) {
	for _, keep := range []bool{true, false} {
		objs := objects(t, helm(t, nil, "template", "wp", chartDir, "--set", fmt.Sprintf("crds.keep=%t", keep)))
		rendered := ofKind(objs, "CustomResourceDefinition")
		bases := append(readObjects(t, "config/crd/bases/winproxy.io_windowsproxyconfigs.yaml"), readObjects(t, "config/crd/bases/winproxy.io_windowsproxynodes.yaml")...)
		if len(rendered) != len(bases) {
			t.Fatalf("chart renders %d CRDs, config/crd/bases has %d", len(rendered), len(bases))
		}
		for _, want := range bases {
			got := find(t, rendered, "CustomResourceDefinition", want.GetName())
			if policy := got.GetAnnotations()["helm.sh/resource-policy"]; (policy == "keep") != keep {
				t.Errorf("crds.keep=%t: %s has resource-policy %q", keep, got.GetName(), policy)
			}
			got = got.DeepCopy()
			annotations := got.GetAnnotations()
			delete(annotations, "helm.sh/resource-policy")
			got.SetAnnotations(annotations)
			got.SetLabels(nil)
			if !reflect.DeepEqual(got.Object, want.Object) {
				t.Errorf("chart CRD %s differs from config/crd/bases: run 'make manifests'", want.GetName())
			}
		}
	}
	if objs := objects(t, helm(t, nil, "template", "wp", chartDir, "--set", "crds.enabled=false")); len(ofKind(objs, "CustomResourceDefinition")) != 0 {
		t.Error("crds.enabled=false still renders CRDs")
	}
}

// The chart grants exactly the rules of config/rbac: the controller's generated role and the agent's.
func TestHelmRBACMatchesConfig(t *testing.T) {
	objs := objects(t, helm(t, nil, "template", "wp", chartDir))
	for suffix, path := range map[string]string{"-controller": "config/rbac/role.yaml", "-agent": "config/rbac/agent_role.yaml"} {
		want := find(t, readObjects(t, path), "ClusterRole", "")
		got := find(t, objs, "ClusterRole", suffix)
		if !reflect.DeepEqual(got.Object["rules"], want.Object["rules"]) {
			t.Errorf("chart ClusterRole %s differs from %s (run 'make manifests'):\nchart:\n%s\nconfig:\n%s", got.GetName(), path, toYAML(got.Object["rules"]), toYAML(want.Object["rules"]))
		}
	}
}

func TestHelmSchemaRejectsMistakes(t *testing.T) {
	for _, tc := range []struct {
		set  string
		want string
	}{
		{"controler.replicas=2", "additional properties 'controler' not allowed"},
		{"agent.runAsUser=x", "additional properties 'runAsUser' not allowed"},
		{"controller.replicas=two", "/controller/replicas': got string, want integer"},
		{"agent.hns=fake", "/agent/hns'"},
		{"agent.metrics.port=10249", "agent.metrics.port 10249 is the node's port of Windows kube-proxy's metrics"},
	} {
		_, err := helmOn(t, nil, "template", "wp", chartDir, "--set", tc.set)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %s: error %v, want one saying %q", tc.set, err, tc.want)
		}
	}
}

// TestHelmLifecycle installs, upgrades and uninstalls the chart the way a user does, on a control
// plane of its own that starts without the CRDs, so the chart's CRDs are really installed and kept.
func TestHelmLifecycle(t *testing.T) {
	e, err := testenv.Start(testenv.WithoutCRDs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	const ns = "winproxy-system"
	// No --wait: nothing runs pods on this control plane; the objects are checked instead. The
	// agents' API server address comes from the EndpointSlice default/kubernetes
	// (TestHelmAPIServerDiscovery covers the sources).
	out := helm(t, e, "install", "winproxy", chartDir, "--namespace", ns, "--create-namespace")
	if !strings.Contains(out, "kubectl get wpc") {
		t.Errorf("NOTES do not tell the user to run kubectl get wpc:\n%s", out)
	}
	if addr, _ := agentEndpoint(t, e); addr != sliceAddress(t, e) {
		t.Errorf("the agents' API server endpoint = %q, want %s from the EndpointSlice default/kubernetes", addr, sliceAddress(t, e))
	}

	mustKubectlOn(t, e, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/windowsproxyconfigs.winproxy.io", "crd/windowsproxynodes.winproxy.io")
	for _, obj := range []string{
		"deployment/winproxy-controller", "daemonset/winproxy-agent", "service/winproxy-controller-metrics",
		"serviceaccount/winproxy-controller", "serviceaccount/winproxy-agent",
		"role/winproxy-leader-election", "rolebinding/winproxy-leader-election",
	} {
		mustKubectlOn(t, e, "-n", ns, "get", obj)
	}
	for _, obj := range []string{
		"clusterrole/winproxy-controller", "clusterrolebinding/winproxy-controller",
		"clusterrole/winproxy-agent", "clusterrolebinding/winproxy-agent",
		"validatingadmissionpolicy/winproxy-agent-own-node", "validatingadmissionpolicybinding/winproxy-agent-own-node",
	} {
		mustKubectlOn(t, e, "get", obj)
	}

	// What users do next: apply configs and list them.
	samples, err := filepath.Glob(filepath.Join(e.RepoRoot, "config/samples/*.yaml"))
	if err != nil || len(samples) == 0 {
		t.Fatalf("no samples in config/samples: %v", err)
	}
	out = mustKubectlOn(t, e, "apply", "-f", "config/samples/")
	if !strings.Contains(out, "windowsproxyconfig.winproxy.io/l2bridge-dsr created") {
		t.Errorf("kubectl apply -f config/samples/:\n%s", out)
	}
	sameColumns(t, mustKubectlOn(t, e, "get", "wpc"), "NAME", "DSR", "NETWORK", "NODES", "PROGRAMMED", "DOWNGRADED", "READY", "AGE")

	// An upgrade with changed values changes the objects, adds the default config (which needs the
	// CRDs of the first install), and drops what is no longer wanted.
	helm(t, e, "upgrade", "winproxy", chartDir, "--namespace", ns, "--reuse-values",
		"--set", "controller.replicas=2", "--set", "agent.hns=sim", "--set", "admissionPolicy.enabled=false",
		"--set", "defaultConfig.enabled=true")
	if got := mustKubectlOn(t, e, "-n", ns, "get", "deployment/winproxy-controller", "-o", "jsonpath={.spec.replicas}"); got != "2" {
		t.Errorf("after upgrade, replicas = %s, want 2", got)
	}
	if got := mustKubectlOn(t, e, "-n", ns, "get", "daemonset/winproxy-agent", "-o", "jsonpath={.spec.template.spec.containers[0].args}"); !strings.Contains(got, "--hns=sim") {
		t.Errorf("after upgrade, agent args = %s, want --hns=sim", got)
	}
	if _, err := kubectlOn(e, "get", "validatingadmissionpolicy/winproxy-agent-own-node"); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Errorf("admissionPolicy.enabled=false left the policy in place: %v", err)
	}
	if got := mustKubectlOn(t, e, "get", "wpc", "-o", "name"); strings.Count(got, "\n") != len(samples)+1 || !strings.Contains(got, "windowsproxyconfig.winproxy.io/default\n") {
		t.Errorf("after the upgrade, want the %d samples and the default config; kubectl get wpc -o name:\n%s", len(samples), got)
	}

	// Uninstall removes the release's objects, the default config among them, but keeps the CRDs
	// and with them the user's configs.
	helm(t, e, "uninstall", "winproxy", "--namespace", ns)
	ctx := context.Background()
	testenv.Eventually(t, 30*time.Second, func() error {
		for _, kind := range []string{"deployment/winproxy-controller", "daemonset/winproxy-agent"} {
			if _, err := kubectlOn(e, "-n", ns, "get", kind); err == nil || !strings.Contains(err.Error(), "NotFound") {
				return fmt.Errorf("%s still there after uninstall (%w)", kind, err)
			}
		}
		for _, kind := range []string{"clusterrole/winproxy-controller", "clusterrole/winproxy-agent", "wpc/default"} {
			if _, err := kubectlOn(e, "get", kind); err == nil || !strings.Contains(err.Error(), "NotFound") {
				return fmt.Errorf("%s still there after uninstall (%w)", kind, err)
			}
		}
		return nil
	})
	for _, crd := range []string{"windowsproxyconfigs.winproxy.io", "windowsproxynodes.winproxy.io"} {
		var obj unstructured.Unstructured
		obj.SetAPIVersion("apiextensions.k8s.io/v1")
		obj.SetKind("CustomResourceDefinition")
		if err := e.Client.Get(ctx, client.ObjectKey{Name: crd}, &obj); apierrors.IsNotFound(err) || obj.GetDeletionTimestamp() != nil {
			t.Errorf("CRD %s was removed by uninstall despite crds.keep", crd)
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if got := mustKubectlOn(t, e, "get", "wpc", "-o", "name"); strings.Count(got, "\n") != len(samples) {
		t.Errorf("uninstall lost configs; kubectl get wpc -o name:\n%s", got)
	}
}
