package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runAgent(args ...string) (string, error) {
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestPlanCommand(t *testing.T) {
	out, err := runAgent("plan", "-f", "../../docs/examples/plan-overlay-dsr.yaml")
	if err != nil || !strings.Contains(out, "LOAD BALANCERS (6)") {
		t.Errorf("plan: err %v, output:\n%s", err, out)
	}
	out, err = runAgent("plan", "-f", "../../docs/examples/plan-overlay-dsr.yaml", "-o", "json")
	if err != nil || !strings.Contains(out, `"schemaVersion": "winproxy.io/plan/v1"`) {
		t.Errorf("plan -o json: err %v, output:\n%s", err, out)
	}
	out, err = runAgent("plan", "-f", "../../docs/examples/plan-overlay-dsr.yaml", "-o", "yaml")
	if err != nil || !strings.Contains(out, "kind: Plan\n") || !strings.Contains(out, "schemaVersion: winproxy.io/plan/v1\n") || !strings.Contains(out, "  family: IPv4\n") {
		t.Errorf("plan -o yaml: err %v, output:\n%s", err, out)
	}
	if _, err := runAgent("plan", "-f", "../../docs/examples/plan-overlay-dsr.yaml", "-o", "wide"); err == nil || !strings.Contains(err.Error(), "table, json, yaml") {
		t.Errorf("-o wide: %v, want the formats listed", err)
	}
	if _, err := runAgent("plan"); err == nil {
		t.Error("neither -f nor --node accepted")
	}
}

// TestPlanAgainstHNSDump feeds `hns dump -o json` of a host in the middle of a migration from
// kube-proxy into `plan --hns`.
func TestPlanAgainstHNSDump(t *testing.T) {
	state := migratingHost(t)
	dir := t.TempDir()
	dump, err := runAgent("hns", "dump", "--hns=sim", "--hns-sim-state", state, "--network", "cbr0", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	dumpFile, planFile := filepath.Join(dir, "host.json"), filepath.Join(dir, "plan.yaml")
	_ = os.WriteFile(dumpFile, []byte(dump), 0o600)
	_ = os.WriteFile(planFile, []byte(`
windowsProxyNode:
  metadata: {name: win-1}
  spec:
    configName: l2bridge
    hash: h
    proxy: {network: {name: cbr0, type: L2Bridge}, nodeIPs: [10.0.0.11]}
services:
- metadata: {namespace: shop, name: legacy}
  spec: {clusterIP: 10.0.0.100, clusterIPs: [10.0.0.100], ports: [{name: http, port: 80, protocol: TCP}]}
endpointSlices:
- metadata: {namespace: shop, name: legacy-abc, labels: {kubernetes.io/service-name: legacy}}
  addressType: IPv4
  ports: [{name: http, port: 8080, protocol: TCP}]
  endpoints: [{addresses: [10.244.1.5], nodeName: win-1, conditions: {ready: true}}]
`), 0o600)

	out, err := runAgent("plan", "-f", planFile, "--hns", dumpFile)
	if err != nil {
		t.Fatalf("plan --hns: %v\n%s", err, out)
	}
	for _, want := range []string{"HNS CALLS AGAINST THE DUMP", "HOST LOAD BALANCERS (2)", "foreign    adopted", "winproxy   deleted", "foreign    left alone"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan --hns lacks %q:\n%s", want, out)
		}
	}
	if _, err := runAgent("plan", "-f", planFile, "--hns", planFile); err == nil {
		t.Error("a plan file accepted as an hns dump")
	}
}

// TestPlanSampleNeedsTheCluster: a sample config is read as it is, and names what it lacks offline.
func TestPlanSampleNeedsTheCluster(t *testing.T) {
	_, err := runAgent("plan", "-f", "../../config/samples/calico-overlay-dsr.yaml", "--node", "win-1", "--kubeconfig", filepath.Join(t.TempDir(), "none"))
	if err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Errorf("err = %v, want the kubeconfig missing", err)
	}
	_, err = runAgent("plan", "-f", "../../config/samples/calico-overlay-dsr.yaml", "--node", "win-1")
	if err == nil || !strings.Contains(err.Error(), "read it from the cluster with --kubeconfig") {
		t.Errorf("err = %v", err)
	}
	if _, err := runAgent("plan", "--kubeconfig", filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "--node is required") {
		t.Errorf("err = %v", err)
	}
}
