//go:build !windows

package controllers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/configevents"
	"github.com/winproxy/winproxy/internal/testbuild"
)

// heartbeatNamespace holds the test agents' heartbeat Leases.
const heartbeatNamespace = "winproxy-heartbeats"

// testGrace is the grace period of the heartbeat tests: short, so that a lost heartbeat shows in
// seconds.
const testGrace = 2 * time.Second

// withHeartbeats adds the heartbeat reconciler to a test controller, as cmd/winproxy-controller
// does, with grace.
func withHeartbeats(grace time.Duration) setupFunc {
	return func(mgr ctrl.Manager, _ *controller) error {
		return NewHeartbeatReconciler(mgr.GetClient(), mgr.GetAPIReader(), heartbeatNamespace, grace, clock.RealClock{}).SetupWithManager(mgr)
	}
}

// beats renews the heartbeat Leases of nodes every interval, as their agents would, until
// stopped; stop and resume act on one node.
type beats struct {
	mu      sync.Mutex
	stopped map[string]bool
	stuck   map[string]string
}

func startBeats(t testing.TB, interval time.Duration, nodes ...string) *beats {
	t.Helper()
	ensureNamespace(t, heartbeatNamespace)
	b := &beats{stopped: map[string]bool{}, stuck: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			for _, n := range nodes {
				b.beat(ctx, n)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		for _, n := range nodes {
			_ = env.Client.Delete(context.Background(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: heartbeatNamespace, Name: n}})
		}
	})
	return b
}

func (b *beats) set(node string, stopped bool, stuck string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped[node], b.stuck[node] = stopped, stuck
}

// beat renews node's Lease, or writes its stuck word once, as winproxy-agent does.
func (b *beats) beat(ctx context.Context, node string) {
	b.mu.Lock()
	stopped, stuck := b.stopped[node], b.stuck[node]
	b.mu.Unlock()
	if stopped && stuck == "" {
		return
	}
	l := &coordinationv1.Lease{}
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: heartbeatNamespace, Name: node}, l)
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: heartbeatNamespace, Name: node,
			Labels: map[string]string{winproxyv1alpha1.HeartbeatLabel: "true"}}}
		l.Spec.RenewTime = ptr.To(metav1.NowMicro())
		_ = env.Client.Create(ctx, l)
		return
	} else if err != nil {
		return
	}
	if stuck != "" {
		if l.Annotations[winproxyv1alpha1.SyncLoopStuckAnnotation] != stuck {
			metav1.SetMetaDataAnnotation(&l.ObjectMeta, winproxyv1alpha1.SyncLoopStuckAnnotation, stuck)
			_ = env.Client.Update(ctx, l)
		}
		return
	}
	delete(l.Annotations, winproxyv1alpha1.SyncLoopStuckAnnotation)
	l.Spec.RenewTime = ptr.To(metav1.NowMicro())
	_ = env.Client.Update(ctx, l)
}

func ensureNamespace(t testing.TB, name string) {
	t.Helper()
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// wpnKstatus is what kstatus reads from WindowsProxyNode name.
func wpnKstatus(t testing.TB, name string) *status.Result {
	t.Helper()
	return kstatusOfKind(t, winproxyv1alpha1.GroupVersion.WithKind("WindowsProxyNode"), name)
}

// waitNode waits until WindowsProxyNode name's condition typ has status st and reason, and
// kstatus reads want from it.
func waitNode(t *testing.T, name, typ string, st metav1.ConditionStatus, reason string, want status.Status) *winproxyv1alpha1.WindowsProxyNode {
	t.Helper()
	var w *winproxyv1alpha1.WindowsProxyNode
	eventually(t, waitTimeout, fmt.Sprintf("%s %s=%s/%s, kstatus %s", name, typ, st, reason, want), func() (bool, string) {
		w = wpns(t)[name]
		if w == nil {
			return false, "no WindowsProxyNode"
		}
		c := meta.FindStatusCondition(w.Status.Conditions, typ)
		res := wpnKstatus(t, name)
		if c == nil {
			return false, "no condition; kstatus " + string(res.Status)
		}
		return c.Status == st && c.Reason == reason && res.Status == want, fmt.Sprintf("%s/%s (%s); kstatus %s: %s", c.Status, c.Reason, c.Message, res.Status, res.Message)
	})
	return w
}

// TestHeartbeatLostAndRestored: one of two agents stops renewing its heartbeat. Within the grace
// period and a sweep its node says the agent is gone and vouches for nothing (kstatus Failed), the
// config is not Ready and names it, with a Warning; the other node is untouched. When the agent
// renews again and reports, both are Ready again, with a Normal event.
func TestHeartbeatLostAndRestored(t *testing.T) {
	startController(t, withHeartbeats(testGrace))
	ag := startAgents(t, "hb-")
	b := startBeats(t, 200*time.Millisecond, "hb-0", "hb-1")
	t.Cleanup(func() { cleanup(t) })
	createNodes(t, rolloutNodes("hb-", 2)...)
	createConfig(t, testbuild.Config("hb"))
	waitReady(t, "hb")
	for _, n := range []string{"hb-0", "hb-1"} {
		waitNode(t, n, winproxyv1alpha1.ConditionAgentAlive, metav1.ConditionTrue, winproxyv1alpha1.ReasonHeartbeatRenewed, status.CurrentStatus)
	}
	if got := kstatusOf(t, "hb").Status; got != status.CurrentStatus {
		t.Fatalf("config kstatus %s before the loss, want Current", got)
	}

	// The agent dies: no heartbeat and no more status writes.
	b.set("hb-0", true, "")
	ag.set("hb-0", silent)
	stoppedAt := time.Now()
	w := waitNode(t, "hb-0", winproxyv1alpha1.ConditionAgentAlive, metav1.ConditionFalse, winproxyv1alpha1.ReasonHeartbeatLost, status.FailedStatus)
	took := time.Since(stoppedAt)
	t.Logf("hb-0 reported lost %v after its last renewal (grace %v, sweep every %v)", took.Round(10*time.Millisecond), testGrace, time.Second)
	if took > testGrace+time.Second+2*time.Second {
		t.Errorf("lost reported after %v, want within the grace period plus a sweep", took)
	}
	for typ, want := range map[string]metav1.ConditionStatus{
		winproxyv1alpha1.ConditionProgrammed: metav1.ConditionUnknown, winproxyv1alpha1.ConditionReady: metav1.ConditionUnknown,
		winproxyv1alpha1.ConditionStalled: metav1.ConditionTrue,
	} {
		if got := meta.FindStatusCondition(w.Status.Conditions, typ); got.Status != want {
			t.Errorf("hb-0 %s = %s/%s, want %s", typ, got.Status, got.Reason, want)
		}
	}
	cfg := waitCondition(t, "hb", winproxyv1alpha1.ConditionReady, metav1.ConditionFalse, winproxyv1alpha1.ReasonNodesNotProgrammed)
	if cfg.Status.Nodes.Unreachable != 1 || !strings.Contains(cond(cfg, winproxyv1alpha1.ConditionReady).Message, "hb-0 (HeartbeatLost)") {
		t.Errorf("config: unreachable %d, Ready message %q; want 1 and hb-0 named", cfg.Status.Nodes.Unreachable, cond(cfg, winproxyv1alpha1.ConditionReady).Message)
	}
	if d := cond(cfg, winproxyv1alpha1.ConditionDegraded); d.Status != metav1.ConditionTrue || !strings.Contains(d.Message, "hb-0 (HeartbeatLost)") {
		t.Errorf("config Degraded = %s: %s, want True naming hb-0", d.Status, d.Message)
	}
	waitKstatus(t, "hb", status.FailedStatus)
	waitEvent(t, "hb", "Warning", winproxyv1alpha1.ReasonHeartbeatLost, "Node hb-0", "no heartbeat since")
	if w := wpns(t)["hb-1"]; meta.FindStatusCondition(w.Status.Conditions, winproxyv1alpha1.ConditionReady).Status != metav1.ConditionTrue {
		t.Errorf("hb-1 is not Ready while only hb-0 went silent: %+v", w.Status.Conditions)
	}

	b.set("hb-0", false, "")
	ag.set("hb-0", programs)
	waitNode(t, "hb-0", winproxyv1alpha1.ConditionReady, metav1.ConditionTrue, winproxyv1alpha1.ReasonSynced, status.CurrentStatus)
	cfg = waitReady(t, "hb")
	if cfg.Status.Nodes.Unreachable != 0 {
		t.Errorf("unreachable = %d after the heartbeat came back", cfg.Status.Nodes.Unreachable)
	}
	waitEvent(t, "hb", "Normal", configevents.HeartbeatRestored, "Node hb-0")
	waitKstatus(t, "hb", status.CurrentStatus)
}

// TestHeartbeatStuckAndNeverSeen: an agent that says its sync loop is stuck is reported at once,
// not after the grace period; a node whose agent never created its Lease is reported a grace
// period after its WindowsProxyNode appeared.
func TestHeartbeatStuckAndNeverSeen(t *testing.T) {
	const grace = 10 * time.Second
	startController(t, withHeartbeats(grace))
	ag := startAgents(t, "hbs-")
	b := startBeats(t, 200*time.Millisecond, "hbs-0")
	t.Cleanup(func() { cleanup(t) })
	createNodes(t, rolloutNodes("hbs-", 2)...)
	createConfig(t, testbuild.Config("hbs"))
	waitNode(t, "hbs-0", winproxyv1alpha1.ConditionAgentAlive, metav1.ConditionTrue, winproxyv1alpha1.ReasonHeartbeatRenewed, status.CurrentStatus)

	// A stuck agent writes no status either.
	ag.set("hbs-0", silent)
	b.set("hbs-0", true, "HNS has not answered and no sync has completed for 2m0s")
	at := time.Now()
	w := waitNode(t, "hbs-0", winproxyv1alpha1.ConditionAgentAlive, metav1.ConditionFalse, winproxyv1alpha1.ReasonSyncLoopStuck, status.FailedStatus)
	if took := time.Since(at); took >= grace {
		t.Errorf("stuck reported after %v, want well within the grace period of %v", took, grace)
	}
	if msg := meta.FindStatusCondition(w.Status.Conditions, winproxyv1alpha1.ConditionAgentAlive).Message; !strings.Contains(msg, "HNS has not answered") {
		t.Errorf("AgentAlive message %q does not carry the agent's words", msg)
	}

	w = waitNode(t, "hbs-1", winproxyv1alpha1.ConditionAgentAlive, metav1.ConditionFalse, winproxyv1alpha1.ReasonHeartbeatLost, status.FailedStatus)
	if msg := meta.FindStatusCondition(w.Status.Conditions, winproxyv1alpha1.ConditionAgentAlive).Message; !strings.Contains(msg, "does not exist") {
		t.Errorf("AgentAlive message %q, want it to say the Lease does not exist", msg)
	}
	if age := time.Since(w.CreationTimestamp.Time); age < grace {
		t.Errorf("hbs-1 reported lost %v after its WindowsProxyNode appeared, before the grace period of %v", age, grace)
	}
}

// TestAutoRollbackCountsASilentNode: a node that programmed the new config and then lost its
// heartbeat during the rollout counts as failing once the progress deadline passes, and the config
// rolls back, naming it.
func TestAutoRollbackCountsASilentNode(t *testing.T) {
	c := startController(t, withHeartbeats(testGrace))
	ag := startAgents(t, "hbr-")
	b := startBeats(t, 200*time.Millisecond, "hbr-0", "hbr-1")
	t.Cleanup(func() { cleanup(t) })
	createNodes(t, rolloutNodes("hbr-", 2)...)
	createConfig(t, testbuild.Config("hbr", autoRollback(60), func(c *winproxyv1alpha1.WindowsProxyConfig) {
		c.Spec.Rollout.MaxUnavailable = ptrTo(intstr.FromString("100%"))
	}))
	waitReady(t, "hbr")
	good := hashes(t)
	eventually(t, waitTimeout, "the first spec recorded as the last good one", func() (bool, string) {
		cfg := getConfig(t, "hbr")
		return cfg.Status.LastGood != nil, "no lastGood"
	})

	// Both nodes get the new config at once; hbr-0 programs it, hbr-1 keeps the rollout under way
	// by not answering it; then hbr-0's agent dies.
	ag.setWhen("hbr-1", syncPeriod(60), silent)
	updateConfig(t, "hbr", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Sync.PeriodSeconds = 60 })
	eventually(t, waitTimeout, "hbr-0 programmed the new config and hbr-1 got it", func() (bool, string) {
		ws := wpns(t)
		p, _ := agentReport(ws["hbr-0"])
		return p && ws["hbr-0"].Spec.Hash != good["hbr-0"] && ws["hbr-1"].Spec.Hash != good["hbr-1"],
			fmt.Sprintf("hbr-0 hash %s (was %s) programmed %v, hbr-1 hash %s (was %s)", ws["hbr-0"].Spec.Hash, good["hbr-0"], p, ws["hbr-1"].Spec.Hash, good["hbr-1"])
	})
	b.set("hbr-0", true, "")
	ag.set("hbr-0", silent)
	waitNode(t, "hbr-0", winproxyv1alpha1.ConditionAgentAlive, metav1.ConditionFalse, winproxyv1alpha1.ReasonHeartbeatLost, status.FailedStatus)
	if rb := getConfig(t, "hbr").Status.Rollback; rb != nil {
		t.Fatalf("rolled back before the progress deadline: %+v", rb)
	}
	c.clock.advance(61 * time.Second)
	touchStatus(t, "hbr-1")
	cfg := waitCondition(t, "hbr", winproxyv1alpha1.ConditionRolledBack, metav1.ConditionTrue, winproxyv1alpha1.ReasonRollingBack)
	found := false
	for _, f := range cfg.Status.Rollback.FailedNodes {
		found = found || f.Name == "hbr-0" && f.Reason == winproxyv1alpha1.ReasonHeartbeatLost
	}
	if !found {
		t.Errorf("status.rollback.failedNodes = %+v, want hbr-0 with HeartbeatLost", cfg.Status.Rollback.FailedNodes)
	}
}
