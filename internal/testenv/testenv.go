//go:build !windows

// Package testenv is how integration and end-to-end tests get a real control plane: the one of
// package controlplane, under the names tests use, and Main, a TestMain that shares one control
// plane between a package's tests. Only tests import it; the demo uses controlplane itself.
package testenv

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/winproxy/winproxy/internal/controlplane"
	"github.com/winproxy/winproxy/internal/fleet"
)

// Env is a running control plane.
type Env = controlplane.Env

// Option changes what Start sets up.
type Option = controlplane.Option

// Start, WithoutCRDs, WithAPIServerFlag and RepoRoot are controlplane's.
var (
	Start             = controlplane.Start
	WithoutCRDs       = controlplane.WithoutCRDs
	WithAPIServerFlag = controlplane.WithAPIServerFlag
	RepoRoot          = controlplane.RepoRoot
)

// Main is a test package's TestMain: it starts the control plane into *env, runs the tests, stops
// the control plane and exits with the tests' result. A control plane that cannot start fails the
// run; it is never skipped.
func Main(m *testing.M, env **Env, opts ...Option) {
	e, err := Start(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	e.Stop()
	os.Exit(code)
}

// Eventually polls cond every 100 ms until it returns nil, or fails the test with cond's last
// error once timeout has passed: how a test awaits what a real process or the API server will do,
// without a fixed sleep.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// StartController starts the winproxy-controller binary of binDir against kubeconfig, logging
// into logDir, and stops it when the test ends, printing the end of its log if the test failed.
func StartController(t testing.TB, binDir, kubeconfig, logDir string, args ...string) *fleet.Process {
	t.Helper()
	p, err := fleet.StartController(binDir, kubeconfig, logDir, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("controller log:\n%s", p.Tail(40))
		}
	})
	return p
}
