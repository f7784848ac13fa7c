package main

import (
	"path/filepath"
	"strings"
	"testing"

	logsapi "k8s.io/component-base/logs/api/v1"
)

// A kubeconfig that does not exist is named, not answered with client-go's KUBERNETES_MASTER
// advice; without any, the error lists what was tried.
func TestKubeconfigErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nonexistent")
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, args := range [][]string{
		{"plan", "--kubeconfig", missing, "--node", "win-1"},
		{"migrate", "--kubeconfig", missing, "--daemonset", "kube-system/kube-proxy-windows"},
		{"run", "--kubeconfig", missing, "--hns=sim", "--hns-sim-state", filepath.Join(t.TempDir(), "host.json")},
	} {
		_, err := runAgent(args...)
		if err == nil || !strings.Contains(err.Error(), "--kubeconfig "+missing+": ") || !strings.Contains(err.Error(), "no such file") || strings.Contains(err.Error(), "KUBERNETES_MASTER") {
			t.Errorf("%s: %v, want the missing file named", args[0], err)
		}
	}
	t.Setenv("KUBECONFIG", missing)
	_, err := runAgent("plan", "--node", "win-1")
	for _, want := range []string{"no cluster to talk to", "--kubeconfig not given", "$KUBECONFIG names " + missing + " (does not exist)", "not in a pod"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("$KUBECONFIG naming a missing file: %v, want it to say %q", err, want)
		}
	}
}

// -v is the log verbosity everywhere, as in kube-proxy; the version has no shorthand.
func TestVerbosityFlag(t *testing.T) {
	// Logging is set once per process; each command here sets it anew.
	reset := func() {
		if err := logsapi.ResetForTest(nil); err != nil {
			t.Fatal(err)
		}
	}
	reset()
	t.Cleanup(reset)
	out, err := runAgent("-v", "4", "version")
	if err != nil || !strings.HasPrefix(out, "winproxy-agent ") {
		t.Errorf("-v 4 version: %v\n%s", err, out)
	}
	reset()
	if _, err := runAgent("plan", "-v", "2", "-f", "../../docs/examples/plan-overlay-dsr.yaml"); err != nil {
		t.Errorf("plan -v 2: %v", err)
	}
	reset()
	out, err = runAgent("--version")
	if err != nil || !strings.HasPrefix(out, "winproxy-agent ") {
		t.Errorf("--version: %v\n%s", err, out)
	}
	if _, err := runAgent("-v"); err == nil {
		t.Error("-v without a level accepted, as if it were the version")
	}
}

// run answers a kube-proxy flag with what to set instead.
func TestRunRefusesKubeProxyFlags(t *testing.T) {
	for flag, want := range map[string]string{
		"--enable-dsr":             "set spec.dsr.enabled there",
		"--network-name=vxlan0":    "set spec.network.name there",
		"--source-vip=10.244.1.2":  "set spec.overlay.sourceVIP there",
		"--feature-gates=WinDSR=1": "set spec.featureGates there",
		"--masquerade-all":         "without an equivalent in winproxy",
	} {
		_, err := runAgent("run", flag)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "winproxy-agent migrate") && !strings.Contains(want, "equivalent") {
			t.Errorf("run %s: %v, want %q", flag, err, want)
		}
	}
	if _, err := runAgent("run", "--no-such-flag"); err == nil || err.Error() != "unknown flag: --no-such-flag" {
		t.Errorf("run --no-such-flag: %v, want pflag's own error", err)
	}
}

// run refuses a DNS Service that is not namespace/name, before it touches
// HNS or the API server.
func TestRunRefusesBadClusterDNSService(t *testing.T) {
	for _, v := range []string{"kube-dns", "/kube-dns", "kube-system/", "a/b/c"} {
		_, err := runAgent("run", "--cluster-dns-service="+v)
		if err == nil || !strings.Contains(err.Error(), "want namespace/name") {
			t.Errorf("run --cluster-dns-service=%s: %v, want namespace/name asked for", v, err)
		}
	}
}
