//go:build !windows

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/fleet"
	"github.com/winproxy/winproxy/internal/testenv"
)

// TestHelmDefaultConfigSelectsNoUnlabelledNode turns on the chart's defaultConfig in a cluster
// whose Windows nodes still run kube-proxy (none labelled winproxy.io/managed), with the real
// controller running: the config selects none of them until one is labelled.
func TestHelmDefaultConfigSelectsNoUnlabelledNode(t *testing.T) {
	ctx := context.Background()
	e, err := testenv.Start(testenv.WithoutCRDs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	if err := fleet.CreateNodes(ctx, e.Client, fleet.Nodes); err != nil {
		t.Fatal(err)
	}
	helm(t, e, "install", "winproxy", chartDir, "--namespace", discoveryNS, "--create-namespace")
	notes := helm(t, e, "upgrade", "winproxy", chartDir, "--namespace", discoveryNS, "--reuse-values", "--set", "defaultConfig.enabled=true")
	for _, want := range []string{`It selects the Windows nodes`, `{"matchLabels":{"winproxy.io/managed":"true"}}`, "kubectl label node NODE winproxy.io/managed=true"} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES lack %q:\n%s", want, notes)
		}
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := fleet.Build(ctx, e.RepoRoot, bin); err != nil {
		t.Fatal(err)
	}
	testenv.StartController(t, bin, e.Kubeconfig, dir)

	// Reconciled, and nothing selected: no Windows node is taken from kube-proxy.
	testenv.Eventually(t, time.Minute, func() error {
		var wpc v1alpha1.WindowsProxyConfig
		if err := e.Client.Get(ctx, client.ObjectKey{Name: "default"}, &wpc); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(wpc.Status.Conditions, v1alpha1.ConditionReady)
		if wpc.Status.ObservedGeneration != wpc.Generation || ready == nil || ready.Reason != v1alpha1.ReasonNoNodesSelected {
			return fmt.Errorf("config default not reconciled to %s yet: observedGeneration %d of %d, Ready %+v", v1alpha1.ReasonNoNodesSelected, wpc.Status.ObservedGeneration, wpc.Generation, ready)
		}
		if wpc.Status.Nodes.Selected != 0 {
			return fmt.Errorf("config default selects %d nodes, want none", wpc.Status.Nodes.Selected)
		}
		return nil
	})
	var wpns v1alpha1.WindowsProxyNodeList
	if err := e.Client.List(ctx, &wpns); err != nil {
		t.Fatal(err)
	}
	if len(wpns.Items) != 0 {
		t.Errorf("unlabelled nodes got WindowsProxyNodes: %d", len(wpns.Items))
	}

	// Labelling one node hands that one over, and only it.
	mustKubectlOn(t, e, "label", "node", "win-2022", "winproxy.io/managed=true")
	testenv.Eventually(t, time.Minute, func() error {
		var list v1alpha1.WindowsProxyNodeList
		if err := e.Client.List(ctx, &list); err != nil {
			return err
		}
		if len(list.Items) != 1 || list.Items[0].Name != "win-2022" {
			return fmt.Errorf("WindowsProxyNodes %d, want only win-2022's", len(list.Items))
		}
		return nil
	})
}
