//go:build !windows

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/winproxy/winproxy/internal/testenv"
)

func TestKustomizeRendersTheSameInstall(t *testing.T) {
	objs := objects(t, kubectl(t, "kustomize", "config/default"))
	checkController(t, find(t, objs, "Deployment", "winproxy-controller"))
	checkAgent(t, find(t, objs, "DaemonSet", "winproxy-agent"))

	ns := find(t, objs, "Namespace", "winproxy-system")
	if got := ns.GetLabels()["pod-security.kubernetes.io/enforce"]; got != "privileged" {
		t.Errorf("namespace enforces %q, want privileged (the agent is a HostProcess pod)", got)
	}
	for _, o := range objs {
		if o.GetNamespace() != "" && o.GetNamespace() != "winproxy-system" {
			t.Errorf("%s %s is in namespace %s", o.GetKind(), o.GetName(), o.GetNamespace())
		}
	}
	// The policy names the agent's service account literally: it must be the one the DaemonSet uses.
	policy := find(t, objs, "ValidatingAdmissionPolicy", "agent-own-node")
	if !strings.Contains(toYAML(policy.Object["spec"]), "system:serviceaccount:winproxy-system:winproxy-agent") {
		t.Errorf("the policy does not match the agent's service account winproxy-system/winproxy-agent:\n%s", toYAML(policy.Object["spec"]))
	}
	if sa, _, _ := unstructured.NestedString(find(t, objs, "DaemonSet", "winproxy-agent").Object, "spec", "template", "spec", "serviceAccountName"); sa != "winproxy-agent" {
		t.Errorf("the agent runs as service account %q, the policy expects winproxy-agent", sa)
	}
	if name, _, _ := unstructured.NestedString(find(t, objs, "ValidatingAdmissionPolicyBinding", "agent-own-node").Object, "spec", "policyName"); name != policy.GetName() {
		t.Errorf("the policy binding names policy %q, want %q", name, policy.GetName())
	}
}

// make deploy sets the images through an overlay over config/default; this is that overlay.
func TestKustomizeDeployOverlaySetsImages(t *testing.T) {
	dir := t.TempDir()
	// kustomize accepts only relative paths to other kustomizations.
	base, err := filepath.Rel(dir, filepath.Join(env.RepoRoot, "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	overlay := fmt.Sprintf("resources:\n- %s\nimages:\n- name: ghcr.io/winproxy/winproxy-controller\n  newName: %s\n- name: ghcr.io/winproxy/winproxy-agent\n  newName: %s\n",
		base, "registry.example.com/c:v1", "registry.example.com/a:v1")
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o600); err != nil {
		t.Fatal(err)
	}
	out := kubectl(t, "kustomize", dir)
	for _, want := range []string{"image: registry.example.com/c:v1", "image: registry.example.com/a:v1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the deploy overlay did not set %q", want)
		}
	}
}

// TestKustomizeDeploy applies config/default like `make deploy` and removes it like `make undeploy`,
// on a control plane of its own without CRDs.
func TestKustomizeDeploy(t *testing.T) {
	e, err := testenv.Start(testenv.WithoutCRDs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	mustKubectlOn(t, e, "apply", "--server-side", "-k", "config/default")
	mustKubectlOn(t, e, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/windowsproxyconfigs.winproxy.io", "crd/windowsproxynodes.winproxy.io")
	for _, obj := range []string{"deployment/winproxy-controller", "daemonset/winproxy-agent", "serviceaccount/winproxy-agent", "serviceaccount/winproxy-controller", "role/winproxy-leader-election-role"} {
		mustKubectlOn(t, e, "-n", "winproxy-system", "get", obj)
	}
	for _, obj := range []string{"clusterrole/winproxy-manager-role", "clusterrole/winproxy-agent-role", "validatingadmissionpolicy/winproxy-agent-own-node", "validatingadmissionpolicybinding/winproxy-agent-own-node"} {
		mustKubectlOn(t, e, "get", obj)
	}
	mustKubectlOn(t, e, "apply", "-f", "config/samples/")

	t.Run("policy", func(t *testing.T) {
		checkOwnNodeOnly(t, agentFixture{e: e, namespace: "winproxy-system", sa: "winproxy-agent"}, "policy-kustomize")
	})

	// envtest has no namespace controller, so the namespace itself never finishes terminating: do not wait for it.
	mustKubectlOn(t, e, "delete", "--ignore-not-found", "--wait=false", "-k", "config/default")
	eventually(t, 30*time.Second, func() error {
		for _, obj := range []string{"crd/windowsproxyconfigs.winproxy.io", "clusterrole/winproxy-agent-role", "validatingadmissionpolicy/winproxy-agent-own-node"} {
			if _, err := kubectlOn(e, "get", obj); err == nil || !strings.Contains(err.Error(), "NotFound") {
				return fmt.Errorf("%s still there after undeploy (%w)", obj, err)
			}
		}
		return nil
	})
}
