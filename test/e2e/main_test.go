//go:build !windows

// Package e2e runs winproxy the way users do: the built kubectl (and later helm and the built
// binaries) against a real kube-apiserver and etcd.
package e2e

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/winproxy/winproxy/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// kubectl runs the built kubectl against the test apiserver and returns its standard output.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kubectlErr(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// kubectlErr is kubectl for commands that may fail; the error includes standard error.
func kubectlErr(args ...string) (string, error) {
	path, err := env.Kubectl()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(path, append([]string{"--kubeconfig", env.Kubeconfig}, args...)...)
	cmd.Dir = env.RepoRoot
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%w: %s", err, stderr.String())
	}
	return stdout.String(), nil
}
