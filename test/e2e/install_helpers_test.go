//go:build !windows

package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/winproxy/winproxy/internal/testenv"
)

const chartDir = "charts/winproxy"

// helmBinary is $HELM (exported by the Makefile), else the newest bin/helm-v* of the repository.
func helmBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HELM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("HELM=%s: %v (run 'make helm')", p, err)
		}
		return p
	}
	found, _ := filepath.Glob(filepath.Join(env.RepoRoot, "bin", "helm-v*"))
	if len(found) == 0 {
		t.Fatal("no helm: set HELM or run 'make helm' to build it into bin/")
	}
	sort.Strings(found)
	return found[len(found)-1]
}

// helmOn runs helm against the control plane e (nil: no cluster, e.g. template and lint).
func helmOn(t *testing.T, e *testenv.Env, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	if e != nil {
		args = append([]string{"--kubeconfig", e.Kubeconfig}, args...)
	}
	cmd := exec.Command(helmBinary(t), args...)
	cmd.Dir = env.RepoRoot
	// A private helm home: no user repositories or plugins leak into the test.
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func helm(t *testing.T, e *testenv.Env, args ...string) string {
	t.Helper()
	out, err := helmOn(t, e, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// kubectlOn runs the built kubectl against the control plane e.
func kubectlOn(e *testenv.Env, args ...string) (string, error) {
	path, err := e.Kubectl()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(path, append([]string{"--kubeconfig", e.Kubeconfig}, args...)...)
	cmd.Dir = e.RepoRoot
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func mustKubectlOn(t *testing.T, e *testenv.Env, args ...string) string {
	t.Helper()
	out, err := kubectlOn(e, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// objects decodes a multi-document YAML stream, skipping empty documents.
func objects(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("decoding manifest: %v", err)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// find returns the one object of kind whose name ends in suffix.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, suffix string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind && strings.HasSuffix(o.GetName(), suffix) {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s named *%s, found %d", kind, suffix, len(found))
	}
	return found[0]
}

func ofKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// readObjects decodes a YAML file of the repository.
func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(env.RepoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	return objects(t, string(b))
}

// toYAML is for readable failure messages.
func toYAML(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}
