//go:build !windows

package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

// TestSelfTestMode runs the built winproxy-controller in the hidden self-test mode that the chart's
// `helm test` hook runs, against the real apiserver and with the hook's own RBAC (a token of the
// hook's service account): it fails while the controller Deployment is missing or unavailable,
// and passes once it is available and the apiserver validates WindowsProxyConfigs.
func TestSelfTestMode(t *testing.T) {
	ctx := context.Background()
	const ns, release = "selftest", "st"
	deployment := release + "-winproxy-controller"

	bin := filepath.Join(t.TempDir(), "winproxy-controller")
	build := exec.Command("go", "build", "-o", bin, "./cmd/winproxy-controller")
	build.Dir = env.RepoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	// The hook's RBAC as the chart renders it; the Pod itself cannot run here (nothing runs pods).
	hook := objects(t, helm(t, nil, "template", release, chartDir, "--namespace", ns, "--show-only", "templates/tests/self-test.yaml"))
	var sa string
	var rbac []string
	for _, o := range hook {
		if o.GetKind() == "Pod" {
			continue
		}
		if o.GetKind() == "ServiceAccount" {
			sa = o.GetName()
		}
		rbac = append(rbac, toYAML(o.Object))
	}
	f := filepath.Join(t.TempDir(), "hook-rbac.yaml")
	if err := os.WriteFile(f, []byte(strings.Join(rbac, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "-f", f)
	t.Cleanup(func() { _, _ = kubectlErr("delete", "--ignore-not-found", "-f", f) })

	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos["hook"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["hook"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "hook"}
	cfg.CurrentContext = "hook"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}

	// run runs the self-test as the hook does and returns its exit code and output.
	run := func(extra ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig, "--self-test", "--self-test-namespace=" + ns, "--self-test-deployment=" + deployment}, extra...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return 0, out.String()
		case errors.As(err, &exit):
			return exit.ExitCode(), out.String()
		}
		t.Fatal(err)
		return -1, ""
	}

	if code, out := run("--self-test-timeout=2s"); code != 1 || !strings.Contains(out, "controller Deployment selftest/st-winproxy-controller not found") {
		t.Errorf("without the Deployment: exit %d, want 1 and a message saying it is not found:\n%s", code, out)
	}

	replicas := int32(1)
	labels := map[string]string{"app": "winproxy-selftest"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: deployment},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "controller", Image: "winproxy-controller:test"}}},
			},
		},
	}
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	if code, out := run("--self-test-timeout=3s"); code != 1 || !strings.Contains(out, "not available after 3s") {
		t.Errorf("with an unavailable Deployment: exit %d, want 1 and a message saying it is not available:\n%s", code, out)
	}

	// What the deployment controller would write once the pod is ready.
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
			Message: "Deployment has minimum availability.", LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}},
	}
	if err := env.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	code, out := run()
	if code != 0 {
		t.Fatalf("with an available Deployment: exit %d, want 0:\n%s", code, out)
	}
	for _, want := range []string{
		"Deployment selftest/st-winproxy-controller is available: 1/1 replicas available",
		"A valid WindowsProxyConfig is accepted (server-side dry run)",
		"An invalid WindowsProxyConfig is refused (server-side dry run)",
		"overlay.sourceVIP is required",
		"Self-test passed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("self-test output lacks %q:\n%s", want, out)
		}
	}
	// Dry runs only: nothing was created.
	var configs v1alpha1.WindowsProxyConfigList
	if err := env.Client.List(ctx, &configs); err != nil {
		t.Fatal(err)
	}
	for _, c := range configs.Items {
		if strings.HasPrefix(c.Name, "winproxy-self-test") {
			t.Errorf("the self-test left WindowsProxyConfig %s behind", c.Name)
		}
	}
}
