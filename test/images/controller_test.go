//go:build !windows

package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/imagebuild"
	"github.com/winproxy/winproxy/internal/testbuild"
	"github.com/winproxy/winproxy/internal/testenv"
)

// The controller binary taken out of the image's layer, for this machine's architecture, runs
// against the test apiserver and reconciles a config: it accepts it and writes the node's
// resolved config.
func TestControllerFromTheImageReconcilesAConfig(t *testing.T) {
	got := firstBuild(t)["winproxy-controller"]
	var binary []byte
	for i, m := range got.manifests {
		if m.Platform.Architecture == runtime.GOARCH {
			var err error
			if binary, err = imagebuild.ReadFile(got.images[i], "winproxy-controller"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if binary == nil {
		t.Fatalf("the controller image has no linux/%s image to run here", runtime.GOARCH)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "winproxy-controller"), binary, 0o755); err != nil {
		t.Fatal(err)
	}
	controller := testenv.StartController(t, dir, env.Kubeconfig, dir)

	ctx := context.Background()
	node := testbuild.Node("win-image", testbuild.Kubelet("v1.35.0"), testbuild.InternalIPs("10.0.0.5"))
	status := node.Status
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status = status
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, testbuild.Config("from-image")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() error {
		var wpc v1alpha1.WindowsProxyConfig
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "from-image"}, &wpc); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(wpc.Status.Conditions, v1alpha1.ConditionAccepted); c == nil || c.Status != "True" || c.ObservedGeneration != wpc.Generation {
			return fmt.Errorf("config conditions %+v: not Accepted for generation %d", wpc.Status.Conditions, wpc.Generation)
		}
		var wpn v1alpha1.WindowsProxyNode
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "win-image"}, &wpn); err != nil {
			return err
		}
		if wpn.Spec.ConfigName != "from-image" || wpn.Spec.Hash == "" {
			return fmt.Errorf("WindowsProxyNode spec config %q hash %q: not the config's", wpn.Spec.ConfigName, wpn.Spec.Hash)
		}
		return nil
	})
	if controller.Exited() {
		t.Error("the controller exited")
	}
}
