//go:build !windows

package controllers

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/configevents"
	"github.com/winproxy/winproxy/internal/testbuild"
)

// autoRollback turns on spec.rollout.autoRollback with a progress deadline of deadline seconds.
func autoRollback(deadline int32) func(*winproxyv1alpha1.WindowsProxyConfig) {
	return func(c *winproxyv1alpha1.WindowsProxyConfig) {
		c.Spec.Rollout.AutoRollback = true
		c.Spec.Rollout.ProgressDeadlineSeconds = deadline
	}
}

// syncPeriod matches the configs with sync period p: the tests' stand-in for a config that
// breaks a node.
func syncPeriod(p int32) func(*winproxyv1alpha1.ResolvedProxyConfig) bool {
	return func(c *winproxyv1alpha1.ResolvedProxyConfig) bool { return c.Sync.PeriodSeconds == p }
}

// specWrites is the number of WindowsProxyNode spec writes c made.
func (c *controller) specWrites() int {
	w := c.writes.snapshot()
	return w["patch *v1alpha1.WindowsProxyNode"] + w["create *v1alpha1.WindowsProxyNode"]
}

// watchUnavailable records the most nodes at once not programmed on the config they carried.
func watchUnavailable(t *testing.T) *peakWatch {
	return watchPeak(t, func(n *winproxyv1alpha1.WindowsProxyNode) bool {
		programmed, _ := agentReport(n)
		return !programmed
	})
}

// TestAutoRollbackRollsBackEveryUpdatedNode: a config change that one node fails is rolled back
// on every node that got it, one node at a time (maxUnavailable 1), reported as RolledBack (not
// Ready, kstatus Failed) with the failing node named, and not rolled out again until the spec
// changes; a change of the rollout settings alone is not such a change, a new config is.
func TestAutoRollbackRollsBackEveryUpdatedNode(t *testing.T) {
	c := startController(t)
	ag := startAgents(t, "rb-")
	t.Cleanup(func() { cleanup(t) })
	createNodes(t, rolloutNodes("rb-", 3)...)
	createConfig(t, testbuild.Config("rb", autoRollback(10)))
	cfg := waitReady(t, "rb")
	good := hashes(t)
	eventually(t, waitTimeout, "the first spec recorded as the last good one", func() (bool, string) {
		cfg = getConfig(t, "rb")
		return cfg.Status.LastGood != nil && cfg.Status.LastGood.Generation == 1, fmt.Sprintf("lastGood %+v", cfg.Status.LastGood)
	})

	// rb-2, last in line, fails the new config: rb-0 and rb-1 program it first. Before the
	// deadline, the Degraded node stalls the rollout as it does without autoRollback.
	ag.setWhen("rb-2", syncPeriod(60), degrades)
	updateConfig(t, "rb", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Sync.PeriodSeconds = 60 })
	cfg = waitCondition(t, "rb", winproxyv1alpha1.ConditionProgressing, metav1.ConditionFalse, winproxyv1alpha1.ReasonRolloutStalled)
	for n, h := range hashes(t) {
		if h == good[n] {
			t.Fatalf("%s did not get the new config before the stall", n)
		}
	}
	if rb := cond(cfg, winproxyv1alpha1.ConditionRolledBack); rb.Status != metav1.ConditionFalse || cfg.Status.Rollback != nil {
		t.Errorf("rolled back before the progress deadline: RolledBack %s/%s, status.rollback %+v", rb.Status, rb.Reason, cfg.Status.Rollback)
	}

	// Past the deadline rb-2 failed the config: every node goes back, one at a time.
	unavailable := watchUnavailable(t)
	writes := c.specWrites()
	start := time.Now()
	c.clock.advance(11 * time.Second)
	touchStatus(t, "rb-2")
	cfg = waitCondition(t, "rb", winproxyv1alpha1.ConditionRolledBack, metav1.ConditionTrue, winproxyv1alpha1.ReasonRollbackComplete)
	t.Logf("rollback of 3 nodes with maxUnavailable 1 (agents polling every 50 ms): %v from the deadline to RollbackComplete, %d WindowsProxyNode writes",
		time.Since(start).Round(time.Millisecond), c.specWrites()-writes)
	if diff := cmp.Diff(good, hashes(t)); diff != "" {
		t.Errorf("hashes after the rollback (-want the last good ones,+got):\n%s", diff)
	}
	if n := c.specWrites() - writes; n != 3 {
		t.Errorf("the rollback wrote %d WindowsProxyNodes, want 3 (one per node)", n)
	}
	if m := unavailable.peak(); m != 1 {
		t.Errorf("at most %d nodes were unavailable at once during the rollback, want 1 (maxUnavailable)", m)
	}
	for typ, want := range map[string]string{
		winproxyv1alpha1.ConditionReady:       "False/" + winproxyv1alpha1.ReasonRolledBack,
		winproxyv1alpha1.ConditionStalled:     "True/" + winproxyv1alpha1.ReasonRolledBack,
		winproxyv1alpha1.ConditionReconciling: "False/" + winproxyv1alpha1.ReasonRolledBack,
		winproxyv1alpha1.ConditionProgressing: "False/" + winproxyv1alpha1.ReasonRollbackComplete,
		winproxyv1alpha1.ConditionDegraded:    "False/" + winproxyv1alpha1.ReasonAsExpected,
	} {
		if got := cond(cfg, typ); string(got.Status)+"/"+got.Reason != want {
			t.Errorf("%s = %s/%s (%s), want %s", typ, got.Status, got.Reason, got.Message, want)
		}
	}
	if rb := cfg.Status.Rollback; rb == nil || rb.Generation != 2 || len(rb.FailedNodes) != 1 || rb.FailedNodes[0].Name != "rb-2" || rb.FailedNodes[0].Reason != winproxyv1alpha1.ReasonNodeDegraded {
		t.Errorf("status.rollback = %+v, want generation 2 failed by rb-2 (NodeDegraded)", cfg.Status.Rollback)
	}
	if cfg.Status.LastGood == nil || cfg.Status.LastGood.Generation != 1 {
		t.Errorf("lastGood = %+v, want generation 1", cfg.Status.LastGood)
	}
	waitKstatus(t, "rb", status.FailedStatus)
	waitEvent(t, "rb", "Warning", configevents.RolledBack, "Generation 2 failed on 1 nodes: rb-2 (NodeDegraded)", "back to generation 1")
	waitEvent(t, "rb", "Normal", configevents.RollbackCompleted)
	kubectl, err := env.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(kubectl, "--kubeconfig", env.Kubeconfig, "wait", "--for=condition=RolledBack", "wpc/rb", "--timeout=10s").CombinedOutput(); err != nil {
		t.Errorf("kubectl wait --for=condition=RolledBack: %v\n%s", err, out)
	}
	if out, err := exec.Command(kubectl, "--kubeconfig", env.Kubeconfig, "wait", "--for=condition=Ready", "wpc/rb", "--timeout=1s").CombinedOutput(); err == nil {
		t.Errorf("kubectl wait --for=condition=Ready returned on a rolled-back config:\n%s", out)
	}

	// A change of the rollout settings alone does not retry the failed config.
	updateConfig(t, "rb", func(c *winproxyv1alpha1.WindowsProxyConfig) {
		c.Spec.Rollout.MaxUnavailable = ptrTo(intstr.FromInt32(3))
	})
	waitCondition(t, "rb", winproxyv1alpha1.ConditionRolledBack, metav1.ConditionTrue, winproxyv1alpha1.ReasonRollbackComplete)
	consistently(t, 2*time.Second, "every node on the last good config", func() (bool, string) {
		h := hashes(t)
		return cmp.Equal(good, h), fmt.Sprintf("%v", h)
	})

	// A new config supersedes the rollback: it is rolled out, and once programmed it is the
	// last good one.
	updateConfig(t, "rb", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Sync.PeriodSeconds = 45 })
	cfg = waitReady(t, "rb")
	if rb := cond(cfg, winproxyv1alpha1.ConditionRolledBack); rb.Status != metav1.ConditionFalse || cfg.Status.Rollback != nil {
		t.Errorf("after a new config: RolledBack %s/%s, status.rollback %+v", rb.Status, rb.Reason, cfg.Status.Rollback)
	}
	eventually(t, waitTimeout, "the new spec recorded as the last good one", func() (bool, string) {
		cfg = getConfig(t, "rb")
		return cfg.Status.LastGood != nil && cfg.Status.LastGood.Generation == cfg.Generation && cfg.Status.LastGood.Spec.Sync.PeriodSeconds == 45,
			fmt.Sprintf("generation %d, lastGood %+v", cfg.Generation, cfg.Status.LastGood)
	})
	for n, w := range wpns(t) {
		if w.Spec.Proxy.Sync.PeriodSeconds != 45 {
			t.Errorf("%s runs sync period %d, want 45", n, w.Spec.Proxy.Sync.PeriodSeconds)
		}
	}
}

// TestAutoRollbackPausesAndSurvivesRestart: a node that never answers a new config misses the
// deadline; the rollback that follows is paused half-way, survives a controller restart and,
// once unpaused, completes, each node moved back once and each event recorded once.
func TestAutoRollbackPausesAndSurvivesRestart(t *testing.T) {
	c := startController(t)
	ag := startAgents(t, "rbr-")
	t.Cleanup(func() { cleanup(t) })
	createNodes(t, rolloutNodes("rbr-", 3)...)
	createConfig(t, testbuild.Config("rbr", autoRollback(10)))
	waitReady(t, "rbr")
	good := hashes(t)

	// rbr-2 never answers the new config. rbr-0 will not answer its way back at first, which
	// holds the rollback half-way.
	ag.setWhen("rbr-2", syncPeriod(60), silent)
	ag.setWhen("rbr-0", syncPeriod(30), silent)
	updateConfig(t, "rbr", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Sync.PeriodSeconds = 60 })
	eventually(t, waitTimeout, "every node on the new config", func() (bool, string) {
		h := hashes(t)
		for n := range good {
			if h[n] == good[n] {
				return false, fmt.Sprintf("%s still on %s", n, h[n])
			}
		}
		return true, ""
	})
	bad := hashes(t)
	writes := c.specWrites()
	c.clock.advance(11 * time.Second)
	touchStatus(t, "rbr-2")
	cfg := waitCondition(t, "rbr", winproxyv1alpha1.ConditionRolledBack, metav1.ConditionTrue, winproxyv1alpha1.ReasonRollingBack)
	if rb := cfg.Status.Rollback; rb == nil || len(rb.FailedNodes) != 1 || rb.FailedNodes[0].Name != "rbr-2" || rb.FailedNodes[0].Reason != winproxyv1alpha1.ReasonProgressDeadlineExceeded {
		t.Fatalf("status.rollback = %+v, want rbr-2 ProgressDeadlineExceeded", cfg.Status.Rollback)
	}
	startTime := cfg.Status.Rollback.StartTime
	waitKstatus(t, "rbr", status.FailedStatus)
	eventually(t, waitTimeout, "rbr-2 and rbr-0 moved back", func() (bool, string) {
		h := hashes(t)
		return h["rbr-2"] == good["rbr-2"] && h["rbr-0"] == good["rbr-0"], fmt.Sprintf("%v", h)
	})

	// Paused: the rollback stops where it is, also once rbr-0 answers, and across a restart.
	updateConfig(t, "rbr", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Rollout.Paused = true })
	cfg = waitCondition(t, "rbr", winproxyv1alpha1.ConditionProgressing, metav1.ConditionFalse, winproxyv1alpha1.ReasonRolloutPaused)
	if r := cond(cfg, winproxyv1alpha1.ConditionRolledBack); r.Status != metav1.ConditionTrue {
		t.Errorf("pausing ended the rollback: RolledBack %s/%s", r.Status, r.Reason)
	}
	ag.setWhen("rbr-0", syncPeriod(30), programs)
	consistently(t, 2*time.Second, "rbr-1 left on the failed config while paused", func() (bool, string) {
		h := hashes(t)
		return h["rbr-1"] == bad["rbr-1"], fmt.Sprintf("%v", h)
	})
	c.stop()
	writes = c.specWrites() - writes
	c = startController(t)
	consistently(t, 2*time.Second, "rbr-1 left on the failed config while paused, after a restart", func() (bool, string) {
		h := hashes(t)
		return h["rbr-1"] == bad["rbr-1"], fmt.Sprintf("%v", h)
	})

	updateConfig(t, "rbr", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Rollout.Paused = false })
	cfg = waitCondition(t, "rbr", winproxyv1alpha1.ConditionRolledBack, metav1.ConditionTrue, winproxyv1alpha1.ReasonRollbackComplete)
	if diff := cmp.Diff(good, hashes(t)); diff != "" {
		t.Errorf("hashes after the rollback (-want the last good ones,+got):\n%s", diff)
	}
	if n := writes + c.specWrites(); n != 3 {
		t.Errorf("the rollback wrote %d WindowsProxyNodes across the restart, want 3 (one per node)", n)
	}
	if !cfg.Status.Rollback.StartTime.Equal(&startTime) {
		t.Errorf("the rollback started again at %v, first at %v", cfg.Status.Rollback.StartTime, startTime)
	}
	waitEvent(t, "rbr", "Normal", configevents.RollbackCompleted)
	counts := map[string]int{}
	for _, e := range eventsAbout(t, "rbr") {
		// A repeated event is one Event with a series counting every occurrence.
		n := 1
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		counts[e.Reason] += n
	}
	if counts[configevents.RolledBack] != 1 || counts[configevents.RollbackCompleted] != 1 {
		t.Errorf("events %v, want one %s and one %s", counts, configevents.RolledBack, configevents.RollbackCompleted)
	}

	// Copying the last good spec back (docs/troubleshooting.md) ends the rollback without
	// moving a node: they run it already.
	writes = c.specWrites()
	updateConfig(t, "rbr", func(c *winproxyv1alpha1.WindowsProxyConfig) {
		sel, ro := c.Spec.NodeSelector, c.Spec.Rollout
		c.Spec = *c.Status.LastGood.Spec.DeepCopy()
		c.Spec.NodeSelector, c.Spec.Rollout = sel, ro
	})
	cfg = waitReady(t, "rbr")
	if r := cond(cfg, winproxyv1alpha1.ConditionRolledBack); r.Status != metav1.ConditionFalse || cfg.Status.Rollback != nil {
		t.Errorf("after copying the last good spec back: RolledBack %s/%s, status.rollback %+v", r.Status, r.Reason, cfg.Status.Rollback)
	}
	if n := c.specWrites() - writes; n != 0 {
		t.Errorf("copying the last good spec back wrote %d WindowsProxyNodes, want none", n)
	}
}

// TestLastGoodOfTheLargestSpec: the largest spec the CRD allows (1000 static source VIPs under
// the longest node names) is copied into status.lastGood, without its selector, which is the only
// unbounded part of a spec, and the status is still written.
func TestLastGoodOfTheLargestSpec(t *testing.T) {
	startController(t)
	startAgents(t, "big-")
	t.Cleanup(func() { cleanup(t) })
	createNodes(t, nodeSpec{name: "big-0", kubelet: "v1.34.1"})
	long := func(i int) string { return fmt.Sprintf("%s-%04d", strings.Repeat("n", 248), i) }
	createConfig(t, testbuild.Config("big", func(c *winproxyv1alpha1.WindowsProxyConfig) {
		c.Spec.Network.Type = winproxyv1alpha1.NetworkTypeOverlay
		static := &winproxyv1alpha1.SourceVIPStatic{Addresses: []winproxyv1alpha1.NodeAddress{{NodeName: "big-0", Address: "10.100.0.254"}}}
		for i := range 999 {
			static.Addresses = append(static.Addresses, winproxyv1alpha1.NodeAddress{NodeName: long(i), Address: fmt.Sprintf("10.1.%d.%d", i/250, 1+i%250)})
		}
		c.Spec.Overlay = &winproxyv1alpha1.OverlaySpec{SourceVIP: winproxyv1alpha1.SourceVIPSpec{Strategy: winproxyv1alpha1.SourceVIPStrategyStatic, Static: static}}
		c.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/os": "windows"}}
	}))
	waitReady(t, "big")
	var cfg *winproxyv1alpha1.WindowsProxyConfig
	eventually(t, waitTimeout, "the spec recorded as the last good one", func() (bool, string) {
		cfg = getConfig(t, "big")
		return cfg.Status.LastGood != nil, "no lastGood"
	})
	if lg := cfg.Status.LastGood.Spec; len(lg.Overlay.SourceVIP.Static.Addresses) != 1000 || lg.NodeSelector != nil {
		t.Errorf("lastGood has %d addresses and selector %v, want 1000 and none", len(lg.Overlay.SourceVIP.Static.Addresses), lg.NodeSelector)
	}
}
