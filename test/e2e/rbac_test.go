//go:build !windows

package e2e

import (
	"strings"
	"sync"
	"testing"
)

// The chart installed once into the shared control plane, whose CRDs testenv already installed
// (crds.enabled=false, as when CRDs are managed outside the release), for the RBAC and policy tests.
const (
	releaseNamespace = "winproxy-e2e"
	agentSA          = "winproxy-agent"
	controllerSA     = "winproxy-controller"
)

var (
	installOnce sync.Once
	installErr  error
)

func installChart(t *testing.T) {
	t.Helper()
	installOnce.Do(func() {
		// The API server address the agents would use is data here: nothing runs the pods.
		_, installErr = helmOn(t, env, "install", "winproxy", chartDir, "--namespace", releaseNamespace, "--create-namespace",
			"--set", "crds.enabled=false", "--set", "apiServer.host=api.winproxy.test", "--set", "apiServer.port=6443")
	})
	if installErr != nil {
		t.Fatal(installErr)
	}
}

// canI asks the apiserver's authorizer whether the service account may do verb on resource.
func canI(t *testing.T, sa, verb, resource string, extra ...string) bool {
	t.Helper()
	args := append([]string{"auth", "can-i", verb, resource, "--as=system:serviceaccount:" + releaseNamespace + ":" + sa}, extra...)
	out, err := kubectlErr(args...)
	switch strings.TrimSpace(out) {
	case "yes":
		return true
	case "no":
		return false
	}
	t.Fatalf("kubectl %s: %q, %v", strings.Join(args, " "), out, err)
	return false
}

type access struct {
	verb, resource string
	extra          []string // e.g. --subresource=status, -A, -n NAMESPACE
	want           bool
}

func checkAccess(t *testing.T, sa string, cases []access) {
	t.Helper()
	for _, c := range cases {
		if got := canI(t, sa, c.verb, c.resource, c.extra...); got != c.want {
			t.Errorf("%s: can-i %s %s %v = %t, want %t", sa, c.verb, c.resource, c.extra, got, c.want)
		}
	}
}

func TestRBACAgentLeastPrivilege(t *testing.T) {
	installChart(t)
	status := "--subresource=status"
	checkAccess(t, agentSA, []access{
		// What it needs.
		{"watch", "windowsproxynodes.winproxy.io", nil, true},
		{"update", "windowsproxynodes.winproxy.io", []string{status}, true},
		{"patch", "windowsproxynodes.winproxy.io", []string{status}, true},
		{"list", "nodes", nil, true},
		{"watch", "services", []string{"-A"}, true},
		{"watch", "endpointslices.discovery.k8s.io", []string{"-A"}, true},
		{"create", "events", []string{"-n", "default"}, true},
		{"create", "events.events.k8s.io", []string{"-n", "default"}, true},
		// No config at all, read or write.
		{"get", "windowsproxyconfigs.winproxy.io", nil, false},
		{"update", "windowsproxyconfigs.winproxy.io", nil, false},
		{"update", "windowsproxyconfigs.winproxy.io", []string{status}, false},
		{"create", "windowsproxyconfigs.winproxy.io", nil, false},
		{"delete", "windowsproxyconfigs.winproxy.io", nil, false},
		// No WindowsProxyNode spec: that is the controller's.
		{"create", "windowsproxynodes.winproxy.io", nil, false},
		{"update", "windowsproxynodes.winproxy.io", nil, false},
		{"patch", "windowsproxynodes.winproxy.io", nil, false},
		{"delete", "windowsproxynodes.winproxy.io", nil, false},
		// No secrets, no pods, no writes to what it watches.
		{"get", "secrets", []string{"-A"}, false},
		{"list", "secrets", []string{"-n", releaseNamespace}, false},
		{"create", "pods", []string{"-A"}, false},
		{"delete", "pods", []string{"-A"}, false},
		{"update", "pods", []string{"-A"}, false},
		{"create", "pods/eviction", []string{"-A"}, false},
		{"update", "nodes", nil, false},
		{"patch", "nodes", []string{status}, false},
		{"update", "services", []string{"-A"}, false},
		{"update", "endpointslices.discovery.k8s.io", []string{"-A"}, false},
	})
}

func TestRBACControllerLeastPrivilege(t *testing.T) {
	installChart(t)
	checkAccess(t, controllerSA, []access{
		{"watch", "windowsproxyconfigs.winproxy.io", nil, true},
		{"patch", "windowsproxyconfigs.winproxy.io", []string{"--subresource=status"}, true},
		{"create", "windowsproxynodes.winproxy.io", nil, true},
		{"delete", "windowsproxynodes.winproxy.io", nil, true},
		{"watch", "nodes", nil, true},
		{"create", "leases.coordination.k8s.io", []string{"-n", releaseNamespace}, true},
		// Leader election is confined to its own namespace.
		{"create", "leases.coordination.k8s.io", []string{"-n", "kube-system"}, false},
		// Never secrets, never the agent's half of WindowsProxyNode, never nodes.
		{"get", "secrets", []string{"-A"}, false},
		{"list", "secrets", []string{"-n", releaseNamespace}, false},
		{"watch", "secrets", []string{"-A"}, false},
		{"update", "windowsproxynodes.winproxy.io", []string{"--subresource=status"}, false},
		{"update", "nodes", nil, false},
		{"create", "pods", []string{"-A"}, false},
		// Nor Pods at all: whether a pod holds a source VIP is its node's agent to tell.
		{"get", "pods", []string{"-A"}, false},
		{"list", "pods", []string{"-A"}, false},
		{"watch", "pods", []string{"-A"}, false},
		{"watch", "services", []string{"-A"}, true},
	})
}
