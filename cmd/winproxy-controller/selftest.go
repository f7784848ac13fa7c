package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
)

// selfTest is the hidden mode the chart's `helm test` hook runs in the controller image, so the
// test needs no third-party image: it waits until the controller Deployment is available, then
// checks that the apiserver validates WindowsProxyConfigs (a server-side dry-run create of a valid
// one is accepted, of an invalid one refused by the CRD's rules). It changes nothing in the cluster.
//
// It needs only get on that Deployment and create on windowsproxyconfigs (the hook's RBAC).
type selfTest struct {
	enabled    bool
	namespace  string
	deployment string
	timeout    time.Duration
	interval   time.Duration
}

func (s *selfTest) register(fs *pflag.FlagSet) {
	fs.BoolVar(&s.enabled, "self-test", false, "Check an installation and exit (0: passed, 1: failed), as the Helm chart's test hook does.")
	fs.StringVar(&s.namespace, "self-test-namespace", "", "Namespace of the controller Deployment; defaults to the pod's namespace.")
	fs.StringVar(&s.deployment, "self-test-deployment", "", "Name of the controller Deployment to wait for.")
	fs.DurationVar(&s.timeout, "self-test-timeout", 3*time.Minute, "How long to wait for the controller Deployment to become available.")
	for _, name := range []string{"self-test", "self-test-namespace", "self-test-deployment", "self-test-timeout"} {
		_ = fs.MarkHidden(name)
	}
	s.interval = 2 * time.Second
}

// inClusterNamespaceFile holds the pod's namespace when running in a cluster.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// run performs the checks against the cluster of cfg and writes what it found to out.
func (s *selfTest) run(ctx context.Context, cfg *rest.Config, out io.Writer) error {
	if s.deployment == "" {
		return errors.New("self-test: --self-test-deployment is required")
	}
	if s.namespace == "" {
		b, err := os.ReadFile(inClusterNamespaceFile)
		if err != nil {
			return fmt.Errorf("self-test: --self-test-namespace is required outside a cluster: %w", err)
		}
		s.namespace = strings.TrimSpace(string(b))
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := winproxyv1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("self-test: creating the client: %w", err)
	}

	fmt.Fprintf(out, "Waiting up to %s for Deployment %s/%s to be available\n", s.timeout, s.namespace, s.deployment)
	available, err := s.waitAvailable(ctx, c)
	if err != nil {
		return fmt.Errorf("self-test failed: %w", err)
	}
	fmt.Fprintf(out, "Deployment %s/%s is available: %s\n", s.namespace, s.deployment, available)

	valid := selfTestConfig(winproxyv1alpha1.NetworkSpec{Name: "winproxy-self-test", Type: winproxyv1alpha1.NetworkTypeAuto})
	if err := c.Create(ctx, valid, client.DryRunAll); err != nil {
		return fmt.Errorf("self-test failed: the apiserver refused a valid WindowsProxyConfig (server-side dry run): %w", err)
	}
	fmt.Fprintln(out, "A valid WindowsProxyConfig is accepted (server-side dry run)")

	// An Overlay network without a source VIP breaks one of the CRD's CEL rules: its refusal shows
	// that the installed CRD validates, not only that it exists.
	invalid := selfTestConfig(winproxyv1alpha1.NetworkSpec{Name: "winproxy-self-test", Type: winproxyv1alpha1.NetworkTypeOverlay})
	switch err := c.Create(ctx, invalid, client.DryRunAll); {
	case err == nil:
		return errors.New("self-test failed: the apiserver accepted an Overlay WindowsProxyConfig without overlay.sourceVIP: the installed CRD does not validate WindowsProxyConfigs; upgrade the CRDs (crds.enabled) to this release's")
	case !apierrors.IsInvalid(err):
		return fmt.Errorf("self-test failed: dry-run create of an invalid WindowsProxyConfig: %w", err)
	default:
		fmt.Fprintf(out, "An invalid WindowsProxyConfig is refused (server-side dry run): %v\n", err)
	}
	fmt.Fprintln(out, "Self-test passed")
	return nil
}

// selfTestConfig is a WindowsProxyConfig for a dry-run create; the server picks its name, so it
// never collides with a real one.
func selfTestConfig(network winproxyv1alpha1.NetworkSpec) *winproxyv1alpha1.WindowsProxyConfig {
	return &winproxyv1alpha1.WindowsProxyConfig{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "winproxy-self-test-"},
		Spec:       winproxyv1alpha1.WindowsProxyConfigSpec{Network: network},
	}
}

// waitAvailable polls the Deployment until its current generation is rolled out as Available with
// at least one available replica, and says why not when the time is up.
func (s *selfTest) waitAvailable(ctx context.Context, c client.Client) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	key := client.ObjectKey{Namespace: s.namespace, Name: s.deployment}
	var why string
	for {
		var d appsv1.Deployment
		err := c.Get(ctx, key, &d)
		switch {
		case apierrors.IsNotFound(err):
			return "", fmt.Errorf("controller Deployment %s not found", key)
		case apierrors.IsForbidden(err):
			return "", fmt.Errorf("reading Deployment %s: %w", key, err)
		case err != nil:
			why = err.Error()
		default:
			ok, reason := deploymentAvailable(&d)
			if ok {
				return reason, nil
			}
			why = reason
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("controller Deployment %s not available after %s: %s", key, s.timeout, why)
		case <-time.After(s.interval):
		}
	}
}

// deploymentAvailable says whether d's current spec is observed and Available with a replica
// serving, and describes its state either way.
func deploymentAvailable(d *appsv1.Deployment) (bool, string) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	replicas := fmt.Sprintf("%d/%d replicas available", d.Status.AvailableReplicas, want)
	if want == 0 {
		return false, "it is scaled to 0 replicas"
	}
	if d.Status.ObservedGeneration < d.Generation {
		return false, fmt.Sprintf("generation %d not yet observed by the deployment controller (%s)", d.Generation, replicas)
	}
	for _, cond := range d.Status.Conditions {
		if cond.Type != appsv1.DeploymentAvailable {
			continue
		}
		if cond.Status == corev1.ConditionTrue && d.Status.AvailableReplicas > 0 {
			return true, replicas
		}
		return false, fmt.Sprintf("Available=%s (%s: %s), %s", cond.Status, cond.Reason, cond.Message, replicas)
	}
	return false, "no Available condition yet, " + replicas
}
