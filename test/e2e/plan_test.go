//go:build !windows

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/winproxy/winproxy/agent/hnsdump"
	"github.com/winproxy/winproxy/agent/plan"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/fleet"
)

// TestPlanFromCluster runs the built `winproxy-agent plan --kubeconfig --node` against the live
// system: it previews what the node's agent programmed, feeds it the node's `hns dump -o json`
// (nothing to do: every load balancer is the agent's and kept) and previews a sample config, as
// it is, on the same node and host.
func TestPlanFromCluster(t *testing.T) {
	s := startSystem(t)
	t.Cleanup(func() { deleteSystemObjects(t) })
	applyConfig(t, func(*v1alpha1.WindowsProxyConfigSpec) {})
	ready(t, systemConfig)
	const node = "win-2022"
	agent := func(t *testing.T, args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(s.dir, "bin", "winproxy-agent"), args...)
		cmd.Dir = env.RepoRoot
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("winproxy-agent %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return stdout.String()
	}
	planJSON := func(t *testing.T, args ...string) plan.Plan {
		t.Helper()
		out := agent(t, append([]string{"plan", "--kubeconfig", env.Kubeconfig, "--node", node, "-o", "json"}, args...)...)
		var p plan.Plan
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("plan -o json: %v\n%s", err, out)
		}
		return p
	}

	t.Run("the plan from the cluster is what the agent programmed", func(t *testing.T) {
		wpn := getWPN(t, node)
		p := planJSON(t)
		if got, want := len(p.LoadBalancers), int(wpn.Status.LoadBalancers.Desired); got != want {
			t.Errorf("plan: %d load balancers, the agent wants %d", got, want)
		}
		if p.Status.DSR != wpn.Status.DSR || p.Status.SourceVIP != wpn.Status.SourceVIP || p.Status.Network.Name != wpn.Status.Network.Name {
			t.Errorf("plan status %+v\nagent's status %+v", p.Status, wpn.Status)
		}
		if len(p.Assumptions) == 0 {
			t.Error("a plan without the host's dump says nothing of what it assumed")
		}
		out := agent(t, "plan", "--kubeconfig", env.Kubeconfig, "--node", node)
		if !strings.Contains(out, fmt.Sprintf("LOAD BALANCERS (%d)", wpn.Status.LoadBalancers.Desired)) || !strings.Contains(out, "Assumed:") {
			t.Errorf("plan table:\n%s", out)
		}
	})

	dump := filepath.Join(t.TempDir(), node+".hns.json")
	t.Run("hns dump -o json round-trips into plan --hns", func(t *testing.T) {
		out := agent(t, "hns", "dump", "--hns=sim", "--hns-sim-state", s.hosts[node], "--network", fleet.NetworkName, "-o", "json")
		if err := os.WriteFile(dump, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		var d hnsdump.Dump
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatal(err)
		}
		mine := 0
		for _, lb := range d.LoadBalancers {
			if lb.Owner == hnsdump.OwnerWinproxy {
				mine++
			}
		}
		if mine == 0 || mine != len(d.LoadBalancers) {
			t.Errorf("%d of the %d load balancers on %s are winproxy's, want all", mine, len(d.LoadBalancers), node)
		}
		p := planJSON(t, "--hns", dump)
		if len(p.HNSCalls) != 0 {
			t.Errorf("plan --hns against what the agent programmed makes calls: %+v", p.HNSCalls)
		}
		if len(p.HostLoadBalancers) != len(d.LoadBalancers) {
			t.Errorf("plan --hns shows %d host load balancers, the dump has %d", len(p.HostLoadBalancers), len(d.LoadBalancers))
		}
		for _, o := range p.HostLoadBalancers {
			if o.Owner != hnsdump.OwnerWinproxy || o.Outcome != plan.OutcomeKept {
				t.Errorf("host load balancer %+v, want winproxy's and kept", o)
			}
		}
		if len(p.Assumptions) != 0 {
			t.Errorf("a plan from the host's dump assumed %q", p.Assumptions)
		}
	})

	t.Run("a sample config is previewed as it is", func(t *testing.T) {
		// calico-overlay-dsr turns DSR on, which the running config leaves off: every ClusterIP load
		// balancer changes.
		p := planJSON(t, "-f", "config/samples/calico-overlay-dsr.yaml", "--hns", dump)
		if !p.Status.DSR.Requested || !p.Status.DSR.Active {
			t.Errorf("the sample's plan: DSR %+v, want requested and active", p.Status.DSR)
		}
		changed := 0
		for _, c := range p.HNSCalls {
			if c.Error != "" {
				t.Errorf("call refused: %+v", c)
			}
			if c.Operation != "CreateEndpoint" && c.Operation != "DeleteEndpoint" {
				changed++
			}
		}
		if changed == 0 {
			t.Errorf("turning DSR on changes no load balancer: %+v", p.HNSCalls)
		}
	})
}
