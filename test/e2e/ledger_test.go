//go:build !windows

package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/fleet"
	"github.com/winproxy/winproxy/internal/testenv"
)

// TestLedger replays, with real processes, what an adversarial run did to an agent's ledger of
// the load balancers it owns: emptied, it made the agent delete and recreate every load balancer
// of the node; with a stranger's ID added, it made the agent delete the stranger's.
func TestLedger(t *testing.T) {
	s := startSystem(t)
	// Runs before startSystem's cleanup, with the controller still up: the next test starts its
	// own system on a control plane without this one's objects.
	t.Cleanup(func() { deleteSystemObjects(t) })
	applyConfig(t, func(*v1alpha1.WindowsProxyConfigSpec) {})
	ready(t, systemConfig)
	const node = "win-2022"
	agent, ledger := s.agents[node], s.hosts[node]+".owned"
	restart := func(t *testing.T, change func()) {
		t.Helper()
		agent.Kill()
		agent.Wait(10 * time.Second)
		change()
		if err := agent.Start(); err != nil {
			t.Fatal(err)
		}
		waitAgentReady(t, agent, 30*time.Second)
	}
	quiet := func(t *testing.T) {
		t.Helper()
		if w := s.writes(t, node); w != 0 {
			t.Errorf("the restarted agent made %v HNS writes, want 0", w)
		}
		if n, err := agent.Metric("winproxy_agent_foreign_load_balancers_replaced_total"); err != nil || n != 0 {
			t.Errorf("the restarted agent replaced %v foreign load balancers (%v), want 0", n, err)
		}
	}

	t.Run("an emptied ledger costs no HNS write", func(t *testing.T) {
		before := s.lbIDs(t, node)
		restart(t, func() {
			if err := os.WriteFile(ledger, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		})
		quiet(t)
		if after := s.lbIDs(t, node); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("load balancers changed:\n%v\nwere:\n%v", after, before)
		}
		b, err := os.ReadFile(ledger)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "+L "); n != len(before) {
			t.Errorf("the rebuilt ledger records %d load balancers, want the %d adopted:\n%s", n, len(before), b)
		}
	})

	t.Run("a stranger's ID added to the ledger gives the agent no right to it", func(t *testing.T) {
		n, _ := fleet.Find(node)
		h, err := fleet.OpenHost(s.hosts[node], n)
		if err != nil {
			t.Fatal(err)
		}
		stranger, err := h.AddLoadBalancer(hns.LoadBalancer{FrontendVIPs: []netip.Addr{netip.MustParseAddr("10.99.0.1")},
			PortMapping: hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 80, ExternalPort: 80}})
		h.Close()
		if err != nil {
			t.Fatal(err)
		}
		restart(t, func() {
			f, err := os.OpenFile(ledger, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := fmt.Fprintf(f, "+L %s\n", stranger.ID); err != nil {
				t.Fatal(err)
			}
		})
		quiet(t)
		if s.lbIDs(t, node)[stranger.Frontend().String()] != stranger.ID {
			t.Errorf("the stranger's load balancer %s was deleted", stranger.ID)
		}
	})

	t.Run("a ledger that cannot be read is reported before the agent exits", func(t *testing.T) {
		// Root reads any file: a directory where the journal should be is what no one can read.
		saved, err := os.ReadFile(ledger)
		if err != nil {
			t.Fatal(err)
		}
		agent.Kill()
		agent.Wait(10 * time.Second)
		if err := os.Remove(ledger); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(ledger, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := agent.Start(); err != nil {
			t.Fatal(err)
		}
		if code := agent.Wait(30 * time.Second); code <= 0 {
			t.Fatalf("the agent's exit code is %d (-1: still running), want a failure", code)
		}
		wpn := &v1alpha1.WindowsProxyNode{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: node}, wpn); err != nil {
			t.Fatal(err)
		}
		for _, typ := range []string{v1alpha1.ConditionProgrammed, v1alpha1.ConditionDegraded} {
			c := meta.FindStatusCondition(wpn.Status.Conditions, typ)
			if c == nil || c.Reason != v1alpha1.ReasonLedgerNotWritable || !strings.Contains(c.Message, ledger) {
				t.Errorf("%s is %+v, want reason %s naming %s", typ, c, v1alpha1.ReasonLedgerNotWritable, ledger)
			}
		}
		if err := os.Remove(ledger); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(ledger, saved, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := agent.Start(); err != nil {
			t.Fatal(err)
		}
		waitAgentReady(t, agent, 30*time.Second)
	})
}

// deleteSystemObjects deletes the system's config, waits until the controller has deleted its
// WindowsProxyNodes, and deletes the workloads: startSystem cannot create services whose
// ClusterIPs are taken, even by themselves.
func deleteSystemObjects(t *testing.T) {
	ctx := context.Background()
	wpc := &v1alpha1.WindowsProxyConfig{ObjectMeta: metav1.ObjectMeta{Name: systemConfig}}
	if err := env.Client.Delete(ctx, wpc); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		var wpns v1alpha1.WindowsProxyNodeList
		if err := env.Client.List(ctx, &wpns); err != nil {
			return err
		}
		if len(wpns.Items) > 0 {
			return fmt.Errorf("%d WindowsProxyNodes left", len(wpns.Items))
		}
		return nil
	})
	if err := env.Client.DeleteAllOf(ctx, &discoveryv1.EndpointSlice{}, client.InNamespace(fleet.Namespace)); err != nil {
		t.Fatal(err)
	}
	var svcs corev1.ServiceList
	if err := env.Client.List(ctx, &svcs, client.InNamespace(fleet.Namespace)); err != nil {
		t.Fatal(err)
	}
	for i := range svcs.Items {
		if err := env.Client.Delete(ctx, &svcs.Items[i]); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
}
