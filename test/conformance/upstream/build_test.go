package upstream

import (
	"os"
	"path/filepath"
	"testing"
)

// The upstream winkernel the suite compares against is the release of the
// test control plane: one Kubernetes version for the whole repository.
func TestPinsMatchControlPlane(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	gomod, err := os.ReadFile(filepath.Join(root, PinDir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	pins, err := ReadPins(gomod)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := os.ReadFile(filepath.Join(root, "hack", "tools", "k8s", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := required(cp, kubernetesModule)
	if err != nil {
		t.Fatal(err)
	}
	if pins.Kubernetes != want {
		t.Errorf("%s/go.mod pins %s %s, the test control plane (hack/tools/k8s/go.mod) %s: bump both together",
			PinDir, kubernetesModule, pins.Kubernetes, want)
	}
}
