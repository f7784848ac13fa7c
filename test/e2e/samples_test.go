//go:build !windows

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/testenv"
)

// header returns the whitespace-separated column names of kubectl's table output.
func header(out string) []string {
	first, _, _ := strings.Cut(out, "\n")
	return strings.Fields(first)
}

// row returns the fields of the row whose first column is name.
func row(t *testing.T, out, name string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return f
		}
	}
	t.Fatalf("no row %q in\n%s", name, out)
	return nil
}

func sameColumns(t *testing.T, out string, want ...string) {
	t.Helper()
	if got := header(out); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("columns = %v, want %v\n%s", got, want, out)
	}
}

func TestSamplesApplyAndPrint(t *testing.T) {
	out := kubectl(t, "apply", "-f", "config/samples/")
	for _, name := range []string{"calico-overlay-dsr", "flannel-overlay", "l2bridge-dsr", "fleet-ws2019", "fleet-ws2022", "auto-rollback", "topology-aware-routing"} {
		if !strings.Contains(out, "windowsproxyconfig.winproxy.io/"+name+" created") {
			t.Errorf("kubectl apply did not create %s:\n%s", name, out)
		}
	}
	t.Cleanup(func() { _, _ = kubectlErr("delete", "-f", "config/samples/") })

	out = kubectl(t, "get", "wpc")
	sameColumns(t, out, "NAME", "DSR", "NETWORK", "NODES", "PROGRAMMED", "DOWNGRADED", "READY", "AGE")
	if r := row(t, out, "calico-overlay-dsr"); r[1] != "true" || r[2] != "Overlay" {
		t.Errorf("calico row = %v, want DSR true and NETWORK Overlay", r)
	}
	if r := row(t, out, "l2bridge-dsr"); r[1] != "true" || r[2] != "L2Bridge" {
		t.Errorf("l2bridge row = %v, want DSR true and NETWORK L2Bridge", r)
	}

	// A config that selects no node says NODES 0, not a blank.
	wpc := &v1alpha1.WindowsProxyConfig{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "l2bridge-dsr"}, wpc); err != nil {
		t.Fatal(err)
	}
	wpc.Status = v1alpha1.WindowsProxyConfigStatus{ObservedGeneration: wpc.Generation}
	if err := env.Client.Status().Update(context.Background(), wpc); err != nil {
		t.Fatal(err)
	}
	if r := row(t, kubectl(t, "get", "wpc"), "l2bridge-dsr"); r[3] != "0" || r[4] != "0" {
		t.Errorf("l2bridge row = %v, want NODES 0 and PROGRAMMED 0", r)
	}

	out = kubectl(t, "get", "wpc", "-o", "wide")
	sameColumns(t, out, "NAME", "DSR", "NETWORK", "NODES", "PROGRAMMED", "DOWNGRADED", "READY", "AGE", "UNREACHABLE", "SOURCE-VIP", "MESSAGE")
	if r := row(t, out, "flannel-overlay"); !contains(r, "Create") {
		t.Errorf("flannel row = %v, want SOURCE-VIP Create", r)
	}

	// The category groups both kinds.
	out = kubectl(t, "get", "winproxy")
	if !strings.Contains(out, "windowsproxyconfig.winproxy.io/fleet-ws2022") {
		t.Errorf("kubectl get winproxy does not list the configs:\n%s", out)
	}
}

func TestNodeViewPrintsStatus(t *testing.T) {
	ctx := context.Background()
	wpn := &v1alpha1.WindowsProxyNode{
		ObjectMeta: metav1.ObjectMeta{Name: "win-print"},
		Spec: v1alpha1.WindowsProxyNodeSpec{
			ConfigName: "calico-overlay-dsr",
			Hash:       "abc123",
			Proxy:      v1alpha1.ResolvedProxyConfig{Network: v1alpha1.NetworkSpec{Name: "Calico", Type: v1alpha1.NetworkTypeOverlay}},
		},
	}
	if err := env.Client.Create(ctx, wpn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, wpn) })
	now := metav1.NewTime(time.Now())
	wpn.Status = v1alpha1.WindowsProxyNodeStatus{
		ObservedHash:   "abc123",
		Network:        v1alpha1.NetworkStatus{Name: "Calico", ID: "1234", Type: "Overlay"},
		SourceVIP:      v1alpha1.SourceVIPStatus{Address: "10.244.1.2", Origin: v1alpha1.SourceVIPOriginEndpoint},
		DSR:            v1alpha1.DSRStatus{Requested: true, Active: true},
		IPFamilies:     []v1alpha1.IPFamily{v1alpha1.IPv4, v1alpha1.IPv6},
		IPFamiliesText: "IPv4,IPv6",
		HNS:            v1alpha1.HNSStatus{Version: "13.3"},
		LoadBalancers:  v1alpha1.LoadBalancerCounts{Desired: 7, Programmed: 7},
		Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionProgrammed, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSynced, Message: "7 load balancers programmed", LastTransitionTime: now},
			{Type: v1alpha1.ConditionDualStackDowngraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonOverlayNetwork, Message: "overlay networks support IPv4 only", LastTransitionTime: now},
			{Type: v1alpha1.ConditionAgentAlive, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonHeartbeatRenewed, Message: "the agent renews its heartbeat, Lease winproxy-system/win-print", LastTransitionTime: now},
			{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSynced, Message: "7 load balancers programmed", LastTransitionTime: now},
		},
	}
	if err := env.Client.Status().Update(ctx, wpn); err != nil {
		t.Fatal(err)
	}

	out := kubectl(t, "get", "wpn")
	sameColumns(t, out, "NAME", "CONFIG", "NETWORK", "SOURCE-VIP", "DSR", "LBS", "PROGRAMMED", "DOWNGRADED", "ALIVE", "READY", "AGE")
	r := row(t, out, "win-print")
	if got, want := strings.Join(r[:10], " "), "win-print calico-overlay-dsr Overlay 10.244.1.2 true 7 True True True True"; got != want {
		t.Errorf("wpn row = %q, want %q", got, want)
	}
	out = kubectl(t, "get", "wpn", "-o", "wide")
	sameColumns(t, out, "NAME", "CONFIG", "NETWORK", "SOURCE-VIP", "DSR", "LBS", "PROGRAMMED", "DOWNGRADED", "ALIVE", "READY", "AGE", "HNS", "FAMILIES", "MESSAGE")
	if r := row(t, out, "win-print"); !contains(r, "13.3") || !contains(r, "IPv4,IPv6") {
		t.Errorf("wide wpn row = %v, want HNS 13.3 and FAMILIES IPv4,IPv6", r)
	}
}

func TestExplainShowsFieldDocs(t *testing.T) {
	// The apiserver publishes the CRDs' OpenAPI a moment after they are established: on a fresh
	// control plane, the first explain can come too early.
	testenv.Eventually(t, 30*time.Second, func() error {
		_, err := kubectlErr("explain", "wpc.spec")
		return err
	})
	// kubectl wraps descriptions; compare with whitespace collapsed.
	out := strings.Join(strings.Fields(kubectl(t, "explain", "wpc.spec")), " ")
	for _, want := range []string{"nodeSelector", "network", "dsr", "overlay", "dualStack", "featureGates", "healthCheck", "sync", "rollout", "kube-proxy --feature-gates"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl explain wpc.spec does not mention %q:\n%s", want, out)
		}
	}
	out = strings.Join(strings.Fields(kubectl(t, "explain", "wpc.spec.dsr.enabled")), " ")
	if !strings.Contains(out, "--enable-dsr") {
		t.Errorf("kubectl explain wpc.spec.dsr.enabled does not name the kube-proxy flag:\n%s", out)
	}
	out = kubectl(t, "explain", "wpn.status")
	if !strings.Contains(out, "observedHash") {
		t.Errorf("kubectl explain wpn.status does not document observedHash:\n%s", out)
	}
	// The CRDs' descriptions are paragraphs (hack/crddesc), so kubectl's own wrapping at 76
	// columns fills every line: no line ends where the next word would still have fit, as it did
	// where a Go comment was wrapped.
	for _, field := range []string{"wpc.spec.dsr.enabled", "wpc.spec.featureGates", "wpn.spec.proxy.healthCheck.port"} {
		description := section(kubectl(t, "explain", field), "DESCRIPTION:")
		for i := 1; i < len(description); i++ {
			if next := strings.Fields(description[i]); len(next) > 0 && len(description[i-1])+1+len(next[0]) <= 70 {
				t.Errorf("kubectl explain %s breaks its description after line %d:\n%s", field, i, strings.Join(description, "\n"))
				break
			}
		}
	}
}

// section returns the trimmed lines of the section of kubectl explain's output that starts with
// header, up to the next blank line.
func section(out, header string) []string {
	var lines []string
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.TrimSpace(line) == header:
			in = true
		case in && strings.TrimSpace(line) == "":
			return lines
		case in:
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	return lines
}

func contains(fields []string, s string) bool {
	for _, f := range fields {
		if f == s {
			return true
		}
	}
	return false
}
