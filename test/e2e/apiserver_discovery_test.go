//go:build !windows

package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/internal/testenv"
)

const (
	discoveryNS       = "winproxy-system"
	endpointConfigMap = "configmap/winproxy-apiserver-endpoint"
)

// agentEndpoint is what the chart gave the agents: host:port and where it was found.
func agentEndpoint(t *testing.T, e *testenv.Env) (addr, source string) {
	t.Helper()
	addr = mustKubectlOn(t, e, "-n", discoveryNS, "get", endpointConfigMap, "-o", "jsonpath={.data.KUBERNETES_SERVICE_HOST}:{.data.KUBERNETES_SERVICE_PORT}")
	source = mustKubectlOn(t, e, "-n", discoveryNS, "get", endpointConfigMap, "-o", `jsonpath={.metadata.annotations.winproxy\.io/apiserver-endpoint-source}`)
	return addr, source
}

// sliceAddress is the first address and https port the API server wrote into default/kubernetes.
func sliceAddress(t *testing.T, e *testenv.Env) string {
	t.Helper()
	var slice discoveryv1.EndpointSlice
	if err := e.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "kubernetes"}, &slice); err != nil {
		t.Fatalf("the API server wrote no EndpointSlice default/kubernetes: %v", err)
	}
	if len(slice.Endpoints) == 0 || len(slice.Ports) == 0 || slice.Ports[0].Port == nil {
		t.Fatalf("EndpointSlice default/kubernetes has no address or port: %+v", slice)
	}
	return net.JoinHostPort(slice.Endpoints[0].Addresses[0], strconv.Itoa(int(*slice.Ports[0].Port)))
}

func createClusterInfo(t *testing.T, e *testenv.Env, server string) {
	t.Helper()
	clusterInfo := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-public", Name: "cluster-info"},
		Data:       map[string]string{"kubeconfig": "apiVersion: v1\nkind: Config\nclusters:\n- name: \"\"\n  cluster:\n    certificate-authority-data: Q0E=\n    server: " + server + "\n"},
	}
	if err := e.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-public"}}); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	if err := e.Client.Create(context.Background(), clusterInfo); err != nil {
		t.Fatal(err)
	}
}

// TestHelmAPIServerDiscovery installs the chart without apiServer values on a control plane whose
// API server publishes itself in the EndpointSlice default/kubernetes, as every API server does:
// that address is used, over kube-public/cluster-info, and explicit values win over both.
func TestHelmAPIServerDiscovery(t *testing.T) {
	e, err := testenv.Start(testenv.WithoutCRDs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	want := sliceAddress(t, e)
	// The API server's own: its advertise address (envtest's is a documentation address) and the
	// port it serves on.
	if _, port, _ := net.SplitHostPort(want); !strings.HasSuffix(strings.TrimSuffix(e.Config.Host, "/"), ":"+port) {
		t.Errorf("the EndpointSlice lists %s, not the port of the API server at %s", want, e.Config.Host)
	}

	notes := helm(t, e, "install", "winproxy", chartDir, "--namespace", discoveryNS, "--create-namespace")
	if addr, source := agentEndpoint(t, e); addr != want || source != "EndpointSlice default/kubernetes" {
		t.Errorf("no values, no cluster-info: the agents get %s from %q, want %s from the EndpointSlice default/kubernetes", addr, source, want)
	}
	if !strings.Contains(notes, "The agents reach the API server at "+want+", from the EndpointSlice default/kubernetes") {
		t.Errorf("NOTES do not say which address and source the agents use:\n%s", notes)
	}

	// cluster-info too: the EndpointSlice still comes first.
	createClusterInfo(t, e, "https://cp.winproxy.test:6443")
	helm(t, e, "upgrade", "winproxy", chartDir, "--namespace", discoveryNS)
	if addr, source := agentEndpoint(t, e); addr != want || source != "EndpointSlice default/kubernetes" {
		t.Errorf("with cluster-info too: the agents get %s from %q, want %s from the EndpointSlice", addr, source, want)
	}

	// Explicit values win over both.
	notes = helm(t, e, "upgrade", "winproxy", chartDir, "--namespace", discoveryNS, "--set", "apiServer.host=api.winproxy.test", "--set", "apiServer.port=443")
	if addr, source := agentEndpoint(t, e); addr != "api.winproxy.test:443" || source != "values apiServer.host/port" {
		t.Errorf("explicit values: the agents get %s from %q, want api.winproxy.test:443 from the values", addr, source)
	}
	if !strings.Contains(notes, "The agents reach the API server at api.winproxy.test:443, from the values apiServer.host/port") {
		t.Errorf("NOTES do not say the values were used:\n%s", notes)
	}
}

// TestHelmAPIServerDiscoveryWithoutEndpointSlice runs an API server that does not publish itself
// (--endpoint-reconciler-type=none): with neither the EndpointSlice nor cluster-info the install
// fails and says what to set; with cluster-info it uses that.
func TestHelmAPIServerDiscoveryWithoutEndpointSlice(t *testing.T) {
	e, err := testenv.Start(testenv.WithoutCRDs(), testenv.WithAPIServerFlag("endpoint-reconciler-type", "none"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	var slice discoveryv1.EndpointSlice
	if err := e.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "kubernetes"}, &slice); err == nil {
		t.Fatal("the API server wrote default/kubernetes despite --endpoint-reconciler-type=none: this test needs a cluster without it")
	}

	_, err = helmOn(t, e, "install", "winproxy", chartDir, "--namespace", discoveryNS, "--create-namespace")
	if err == nil || !strings.Contains(err.Error(), "cannot find the API server address for the agents: set apiServer.host and apiServer.port") ||
		!strings.Contains(err.Error(), "neither the EndpointSlice default/kubernetes") {
		t.Fatalf("install with neither source: %v; want the error saying what to set and what was looked for", err)
	}

	createClusterInfo(t, e, "https://cp.winproxy.test:6443")
	notes := helm(t, e, "install", "winproxy", chartDir, "--namespace", discoveryNS, "--create-namespace")
	if addr, source := agentEndpoint(t, e); addr != "cp.winproxy.test:6443" || source != "ConfigMap kube-public/cluster-info" {
		t.Errorf("cluster-info only: the agents get %s from %q, want cp.winproxy.test:6443 from kube-public/cluster-info", addr, source)
	}
	if !strings.Contains(notes, "from the ConfigMap kube-public/cluster-info") {
		t.Errorf("NOTES do not name cluster-info:\n%s", notes)
	}
}

// readmeInstall is the shell block of README.md's Install section, as a user copies it.
func readmeInstall(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.RepoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)\n## Install\n.*?```sh\n(.*?)```").FindSubmatch(data)
	if m == nil {
		t.Fatal("README.md has no ```sh block in its Install section")
	}
	return string(m[1])
}

// TestREADMEInstallLine runs README's install commands as written, with bash, the built kubectl
// and helm on PATH and KUBECONFIG naming a fresh control plane of the kind the demo runs (no
// kube-public/cluster-info, no winproxy yet).
func TestREADMEInstallLine(t *testing.T) {
	script := readmeInstall(t)
	if !strings.Contains(script, "helm install winproxy charts/winproxy") {
		t.Fatalf("README's install block does not install the chart:\n%s", script)
	}
	e, err := testenv.Start(testenv.WithoutCRDs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	path := t.TempDir()
	kubectlPath, err := e.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"kubectl": kubectlPath, "helm": helmBinary(t)} {
		if err := os.Symlink(target, filepath.Join(path, name)); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = e.RepoRoot
	cmd.Env = append(os.Environ(), "PATH="+path+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+e.Kubeconfig, "HOME="+home,
		"HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	out, err := cmd.CombinedOutput()
	t.Logf("README's install block:\n%s\noutput:\n%s", script, out)
	if err != nil {
		t.Fatalf("README's install block failed: %v", err)
	}
	if addr, source := agentEndpoint(t, e); addr != sliceAddress(t, e) || source != "EndpointSlice default/kubernetes" {
		t.Errorf("the agents get %s from %q, want the EndpointSlice's %s", addr, source, sliceAddress(t, e))
	}
	if got := mustKubectlOn(t, e, "get", "namespace", discoveryNS, "-o", `jsonpath={.metadata.labels.pod-security\.kubernetes\.io/enforce}`); got != "privileged" {
		t.Errorf("namespace %s enforces %q, want privileged", discoveryNS, got)
	}
	if strings.Contains(string(out), "WARNING") {
		t.Errorf("following README, NOTES still warn:\n%s", out)
	}
}
