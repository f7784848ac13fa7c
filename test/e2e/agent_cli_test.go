//go:build !windows

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/internal/fleet"
)

// TestAgentCLIKubeconfig runs the built agent as an admin does: an exported $KUBECONFIG is the
// cluster of `plan -f SAMPLE --node`, a kubeconfig path that does not exist is named, and run
// answers a kube-proxy flag with the field to set.
func TestAgentCLIKubeconfig(t *testing.T) {
	// A Windows Server 2022 node: its kernel version tells plan the HNS version.
	ctx := context.Background()
	n := fleet.Node{Name: "win-cli", Windows: true, KubeletVersion: "v1.33.2", Build: "10.0.20348", IP: "172.20.9.11", PodCIDR: "10.250.1.0/24"}
	if err := fleet.CreateNodes(ctx, env.Client, []fleet.Node{n}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, n.Object()) })
	node := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: n.Name}, node); err != nil {
		t.Fatal(err)
	}
	node.Status.NodeInfo.KernelVersion = "10.0.20348.2227"
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}

	sample := "config/samples/l2bridge-dsr.yaml"
	out, stderr, err := runAgentBinary(t, []string{"KUBECONFIG=" + env.Kubeconfig}, "plan", "-f", sample, "--node", n.Name)
	if err != nil || !strings.Contains(out, "Node:         win-cli") {
		t.Errorf("plan -f %s --node with $KUBECONFIG exported: %v\n%s%s", sample, err, out, stderr)
	}
	_, stderr, err = runAgentBinary(t, []string{"KUBECONFIG="}, "plan", "-f", sample, "--node", n.Name)
	if err == nil || !strings.Contains(stderr, "read it from the cluster with --kubeconfig") {
		t.Errorf("without a cluster the sample needs one: %v\n%s", err, stderr)
	}

	missing := filepath.Join(t.TempDir(), "nonexistent")
	_, stderr, err = runAgentBinary(t, nil, "plan", "--kubeconfig", missing, "--node", n.Name)
	if err == nil || !strings.Contains(stderr, "--kubeconfig "+missing+": stat "+missing+": no such file or directory") || strings.Contains(stderr, "KUBERNETES_MASTER") {
		t.Errorf("a kubeconfig that does not exist: %v\n%s", err, stderr)
	}

	out, stderr, err = runAgentBinary(t, []string{"KUBECONFIG=" + env.Kubeconfig}, "plan", "-f", sample, "--node", n.Name, "-o", "yaml")
	if err != nil || !strings.Contains(out, "kind: Plan\n") || !strings.Contains(out, "node: win-cli\n") {
		t.Errorf("plan -o yaml: %v\n%s%s", err, out, stderr)
	}

	_, stderr, err = runAgentBinary(t, nil, "run", "--enable-dsr")
	if err == nil || !strings.Contains(stderr, "--enable-dsr is a kube-proxy flag") || !strings.Contains(stderr, "spec.dsr.enabled") {
		t.Errorf("run --enable-dsr: %v\n%s", err, stderr)
	}
}
