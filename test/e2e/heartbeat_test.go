//go:build !windows

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/testenv"
)

// kstatusOf is what kstatus (Flux, Argo CD, kubectl wait, helm --wait) reads from a winproxy object,
// read unstructured as those tools read it.
func kstatusOf(t *testing.T, kind, name string) *status.Result {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(kind))
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, u); err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// condition is a node's condition as "Status/Reason", or "-" when it has none.
func condition(w *v1alpha1.WindowsProxyNode, typ string) string {
	if c := meta.FindStatusCondition(w.Status.Conditions, typ); c != nil {
		return string(c.Status) + "/" + c.Reason
	}
	return "-"
}

// configEvent finds an event about the system's config with typ and reason whose note names node.
func configEvent(typ, reason, node string) error {
	var events eventsv1.EventList
	if err := env.Client.List(context.Background(), &events); err != nil {
		return err
	}
	for _, e := range events.Items {
		if e.Regarding.Kind == "WindowsProxyConfig" && e.Regarding.Name == systemConfig && e.Type == typ && e.Reason == reason && strings.Contains(e.Note, "Node "+node) {
			return nil
		}
	}
	return fmt.Errorf("no %s %s event about config %s naming node %s among %d events", typ, reason, systemConfig, node, len(events.Items))
}

// silence is how a test makes an agent stop, and brings it back.
type silence struct {
	name       string
	stop, back func(t *testing.T, s *system, node string)
}

var silences = []silence{
	{"SIGKILL, not restarted", func(t *testing.T, s *system, node string) { s.agents[node].Kill() }, func(t *testing.T, s *system, node string) {
		if err := s.agents[node].Start(); err != nil {
			t.Fatal(err)
		}
	}},
	{"SIGSTOP", func(t *testing.T, s *system, node string) {
		if err := s.agents[node].Freeze(); err != nil {
			t.Fatal(err)
		}
	}, func(t *testing.T, s *system, node string) {
		if err := s.agents[node].Thaw(); err != nil {
			t.Fatal(err)
		}
	}},
}

// agentSilent: an agent stopped for good (SIGKILL without restart, or SIGSTOP) is reported
// within the grace period and a sweep: its node says the agent is gone and vouches for nothing
// (kstatus Failed), the config is not Ready and names it with a Warning, the other nodes are
// untouched. Brought back, the node is Ready again with no HNS write, and a Normal event says so.
func (s *system) agentSilent(t *testing.T) {
	const node = "win-2022"
	for _, how := range silences {
		t.Run(how.name, func(t *testing.T) {
			ready(t, systemConfig)
			others := map[string]string{}
			for _, n := range windowsNodes() {
				if n.Name != node {
					others[n.Name] = getWPN(t, n.Name).ResourceVersion
				}
			}
			writes := s.writes(t, node)
			how.stop(t, s, node)
			stopped := time.Now()
			var wpn *v1alpha1.WindowsProxyNode
			testenv.Eventually(t, e2eGracePeriod+15*time.Second, func() error {
				wpn = getWPN(t, node)
				got := condition(wpn, v1alpha1.ConditionAgentAlive) + " " + condition(wpn, v1alpha1.ConditionProgrammed) + " " + condition(wpn, v1alpha1.ConditionReady)
				if want := "False/HeartbeatLost Unknown/HeartbeatLost Unknown/HeartbeatLost"; got != want {
					return fmt.Errorf("%s AgentAlive, Programmed, Ready = %s, want %s", node, got, want)
				}
				return nil
			})
			took := time.Since(stopped)
			t.Logf("%s reported lost %v after the agent stopped (grace period %v)", node, took.Round(100*time.Millisecond), e2eGracePeriod)
			testenv.Eventually(t, 15*time.Second, func() error {
				wpc := getWPC(t, systemConfig)
				r := meta.FindStatusCondition(wpc.Status.Conditions, v1alpha1.ConditionReady)
				if r.Status != metav1.ConditionFalse || !strings.Contains(r.Message, node) || wpc.Status.Nodes.Unreachable != 1 {
					return fmt.Errorf("config Ready=%s (%s), unreachable %d: want False naming %s, 1 unreachable", r.Status, r.Message, wpc.Status.Nodes.Unreachable, node)
				}
				if res := kstatusOf(t, "WindowsProxyConfig", systemConfig); res.Status != status.FailedStatus {
					return fmt.Errorf("config kstatus %s: %s", res.Status, res.Message)
				}
				return configEvent("Warning", v1alpha1.ReasonHeartbeatLost, node)
			})
			if res := kstatusOf(t, "WindowsProxyNode", node); res.Status != status.FailedStatus || !strings.Contains(res.Message, "no heartbeat since") {
				t.Errorf("kstatus of %s = %s (%s), want Failed saying no heartbeat", node, res.Status, res.Message)
			}
			t.Logf("kstatus: WindowsProxyNode %s %s (%s); WindowsProxyConfig %s %s", node, kstatusOf(t, "WindowsProxyNode", node).Status,
				kstatusOf(t, "WindowsProxyNode", node).Message, systemConfig, kstatusOf(t, "WindowsProxyConfig", systemConfig).Status)
			t.Logf("kubectl get wpc,wpn -o wide:\n%s", kubectl(t, "get", "wpc,wpn", "-o", "wide"))
			for name, rv := range others {
				w := getWPN(t, name)
				if w.ResourceVersion != rv || condition(w, v1alpha1.ConditionReady) != "True/Synced" {
					t.Errorf("%s changed (resourceVersion %s -> %s, Ready %s) while only %s stopped", name, rv, w.ResourceVersion, condition(w, v1alpha1.ConditionReady), node)
				}
			}

			how.back(t, s, node)
			testenv.Eventually(t, 60*time.Second, func() error {
				w := getWPN(t, node)
				if got := condition(w, v1alpha1.ConditionAgentAlive) + " " + condition(w, v1alpha1.ConditionReady); got != "True/HeartbeatRenewed True/Synced" {
					return fmt.Errorf("%s AgentAlive, Ready = %s after the agent came back", node, got)
				}
				if res := kstatusOf(t, "WindowsProxyNode", node); res.Status != status.CurrentStatus {
					return fmt.Errorf("kstatus of %s %s", node, res.Status)
				}
				return configEvent("Normal", "HeartbeatRestored", node)
			})
			ready(t, systemConfig)
			if !s.agents[node].Ready() {
				testenv.Eventually(t, 30*time.Second, func() error {
					if !s.agents[node].Ready() {
						return fmt.Errorf("agent %s not ready", node)
					}
					return nil
				})
			}
			after := s.writes(t, node)
			if how.name == "SIGSTOP" {
				after -= writes
			}
			if after != 0 {
				t.Errorf("the agent made %v HNS writes after it came back, want 0: nothing changed meanwhile", after)
			}
		})
	}
}
