//go:build !windows

package controllers

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/configevents"
	"github.com/winproxy/winproxy/internal/testbuild"
)

const waitTimeout = 30 * time.Second

func createConfig(t testing.TB, c *winproxyv1alpha1.WindowsProxyConfig) {
	t.Helper()
	if err := env.Client.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

func updateConfig(t *testing.T, name string, mutate func(*winproxyv1alpha1.WindowsProxyConfig)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c := getConfig(t, name)
		mutate(c)
		return env.Client.Update(context.Background(), c)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func getConfig(t testing.TB, name string) *winproxyv1alpha1.WindowsProxyConfig {
	t.Helper()
	c := &winproxyv1alpha1.WindowsProxyConfig{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// wpns returns the WindowsProxyNodes by name.
func wpns(t testing.TB) map[string]*winproxyv1alpha1.WindowsProxyNode {
	t.Helper()
	var list winproxyv1alpha1.WindowsProxyNodeList
	if err := env.Client.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]*winproxyv1alpha1.WindowsProxyNode{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

func cond(c *winproxyv1alpha1.WindowsProxyConfig, typ string) metav1.Condition {
	if p := meta.FindStatusCondition(c.Status.Conditions, typ); p != nil {
		return *p
	}
	return metav1.Condition{Type: typ, Status: metav1.ConditionUnknown}
}

// waitCondition waits until the config observed its generation and condition typ has status and
// reason.
func waitCondition(t *testing.T, name, typ string, st metav1.ConditionStatus, reason string) *winproxyv1alpha1.WindowsProxyConfig {
	t.Helper()
	var c *winproxyv1alpha1.WindowsProxyConfig
	eventually(t, waitTimeout, fmt.Sprintf("%s %s=%s/%s", name, typ, st, reason), func() (bool, string) {
		c = getConfig(t, name)
		got := cond(c, typ)
		return c.Status.ObservedGeneration == c.Generation && got.Status == st && got.Reason == reason && got.ObservedGeneration == c.Generation,
			fmt.Sprintf("generation %d observed %d, %s=%s/%s: %s", c.Generation, c.Status.ObservedGeneration, typ, got.Status, got.Reason, got.Message)
	})
	return c
}

func waitReady(t *testing.T, name string) *winproxyv1alpha1.WindowsProxyConfig {
	t.Helper()
	return waitCondition(t, name, winproxyv1alpha1.ConditionReady, metav1.ConditionTrue, winproxyv1alpha1.ReasonAllNodesProgrammed)
}

// hashes returns each WindowsProxyNode's spec.hash.
func hashes(t testing.TB) map[string]string {
	out := map[string]string{}
	for name, w := range wpns(t) {
		out[name] = w.Spec.Hash
	}
	return out
}

func TestFleetResolvesPerNodeVersion(t *testing.T) {
	c := startController(t)
	ag := startAgents(t, "fleet-")
	t.Cleanup(func() { cleanup(t) })
	createNodes(t,
		nodeSpec{name: "fleet-114", kubelet: "v1.14.10"},
		nodeSpec{name: "fleet-120", kubelet: "v1.20.15"},
		nodeSpec{name: "fleet-132", kubelet: "v1.32.4"},
		nodeSpec{name: "fleet-133", kubelet: "v1.33.2"},
		nodeSpec{name: "fleet-134", kubelet: "v1.34.0-eks-113cf36"},
		nodeSpec{name: "fleet-137", kubelet: "v1.37.2"},
		nodeSpec{name: "fleet-linux-1", kubelet: "v1.37.2", linux: true},
		nodeSpec{name: "fleet-linux-2", kubelet: "v1.33.0", linux: true},
	)

	// DSR without the gate: nodes before 1.33 cannot use it and get no config.
	createConfig(t, testbuild.Config("fleet", testbuild.DSR()))
	cfg := waitCondition(t, "fleet", winproxyv1alpha1.ConditionAccepted, metav1.ConditionTrue, winproxyv1alpha1.ReasonPartiallyResolved)
	eventually(t, waitTimeout, "the three new nodes programmed", func() (bool, string) {
		cfg = getConfig(t, "fleet")
		return cfg.Status.Nodes.Programmed == 3, fmt.Sprintf("%+v", cfg.Status.Nodes)
	})
	got := map[string]bool{}
	for name, w := range wpns(t) {
		got[name] = w.Spec.Proxy.EnableDSR
	}
	if diff := cmp.Diff(map[string]bool{"fleet-133": true, "fleet-134": true, "fleet-137": true}, got); diff != "" {
		t.Errorf("WindowsProxyNodes (-want,+got):\n%s", diff)
	}
	var failing []string
	for _, p := range cfg.Status.FailingNodes {
		failing = append(failing, p.Name+"/"+p.Reason+": "+p.Message)
	}
	wantFailing := []string{
		"fleet-114/FeatureGateDisabled: WinDSR feature gate not enabled (dsr.enabled needs spec.featureGates.WinDSR: true on Kubernetes 1.14 nodes)",
		"fleet-120/FeatureGateDisabled: WinDSR feature gate not enabled (dsr.enabled needs spec.featureGates.WinDSR: true on Kubernetes 1.20 nodes)",
		"fleet-132/FeatureGateDisabled: WinDSR feature gate not enabled (dsr.enabled needs spec.featureGates.WinDSR: true on Kubernetes 1.32 nodes)",
	}
	if diff := cmp.Diff(wantFailing, failing); diff != "" {
		t.Errorf("failingNodes (-want,+got):\n%s", diff)
	}
	if want := (winproxyv1alpha1.NodeCounts{Selected: 6, Updated: 3, Programmed: 3, Degraded: 3}); cfg.Status.Nodes != want {
		t.Errorf("nodes = %+v, want %+v", cfg.Status.Nodes, want)
	}

	// With WinDSR set, every node resolves; each gets the gates in effect at its version.
	updateConfig(t, "fleet", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.FeatureGates = map[string]bool{"WinDSR": true} })
	cfg = waitReady(t, "fleet")
	ws := wpns(t)
	for name, want := range map[string]map[string]bool{
		"fleet-114": {"WinDSR": true, "WinOverlay": false, "AllowServiceExternalIPs": true},
		"fleet-120": {"WinDSR": true, "WinOverlay": true, "AllowServiceExternalIPs": true},
		"fleet-133": {"WinDSR": true, "WinOverlay": true, "AllowServiceExternalIPs": true, "PreferSameTrafficDistribution": false},
		"fleet-137": {"WinDSR": true, "WinOverlay": true, "AllowServiceExternalIPs": true, "PreferSameTrafficDistribution": true},
	} {
		if diff := cmp.Diff(want, ws[name].Spec.Proxy.FeatureGates); diff != "" {
			t.Errorf("%s featureGates (-want,+got):\n%s", name, diff)
		}
	}
	if w := ws["fleet-134"]; w.Spec.Proxy.KubernetesVersion != "1.34" || w.Spec.Proxy.PodCIDRs[0] != "10.100.4.0/24" || w.Spec.Proxy.NodeIPs[0] != "192.168.0.5" {
		t.Errorf("fleet-134 per-node inputs: %+v", w.Spec.Proxy)
	}
	if len(cfg.Status.FailingNodes) != 0 || cfg.Status.Nodes.Programmed != 6 {
		t.Errorf("status after the fix: %+v, failing %v", cfg.Status.Nodes, cfg.Status.FailingNodes)
	}

	// WinOverlay=false is locked on 1.34+: those nodes keep their last good config.
	before := hashes(t)
	updateConfig(t, "fleet", func(c *winproxyv1alpha1.WindowsProxyConfig) {
		c.Spec.FeatureGates = map[string]bool{"WinDSR": true, "WinOverlay": false}
		c.Spec.Rollout.MaxUnavailable = ptrTo(intstr.FromString("100%"))
	})
	eventually(t, waitTimeout, "1.34 and 1.37 reported as locked", func() (bool, string) {
		cfg = getConfig(t, "fleet")
		var names []string
		for _, p := range cfg.Status.FailingNodes {
			if p.Reason == winproxyv1alpha1.ReasonFeatureGateLocked {
				names = append(names, p.Name)
			}
		}
		return cfg.Status.ObservedGeneration == cfg.Generation && slices.Equal(names, []string{"fleet-134", "fleet-137"}) && cfg.Status.Nodes.Programmed == 4, fmt.Sprintf("%v %+v", cfg.Status.FailingNodes, cfg.Status.Nodes)
	})
	after := hashes(t)
	for _, n := range []string{"fleet-134", "fleet-137"} {
		if after[n] != before[n] {
			t.Errorf("%s lost its last good config: hash %s -> %s", n, before[n], after[n])
		}
	}
	if after["fleet-133"] == before["fleet-133"] {
		t.Error("fleet-133 did not get the new config")
	}
	if got := cfg.Status.FailingNodes[0].Message; got != "cannot set feature gate WinOverlay to false, feature is locked to true (node runs Kubernetes 1.34; remove the gate from spec.featureGates)" {
		t.Errorf("locked gate message = %q", got)
	}
	if cond(cfg, winproxyv1alpha1.ConditionReady).Status != metav1.ConditionFalse {
		t.Errorf("Ready = %+v, want False while two nodes cannot use the config", cond(cfg, winproxyv1alpha1.ConditionReady))
	}

	// Fixed again: Ready, kstatus Current, and kubectl wait returns. One node proxies IPv4 only.
	ag.downgrade("fleet-120")
	updateConfig(t, "fleet", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.FeatureGates = map[string]bool{"WinDSR": true} })
	cfg = waitCondition(t, "fleet", winproxyv1alpha1.ConditionDualStackDowngraded, metav1.ConditionTrue, winproxyv1alpha1.ReasonNodesDowngraded)
	cfg = waitReady(t, "fleet")
	if cfg.Status.Nodes.DualStackDowngraded != 1 {
		t.Errorf("dualStackDowngraded = %d, want 1", cfg.Status.Nodes.DualStackDowngraded)
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: u})
	if err != nil || res.Status != status.CurrentStatus {
		t.Errorf("kstatus = %v (%v), want Current", res, err)
	}
	kubectl, err := env.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubectl, "--kubeconfig", env.Kubeconfig, "wait", "--for=condition=Ready", "wpc/fleet", "--timeout=30s").CombinedOutput()
	if err != nil {
		t.Errorf("kubectl wait: %v\n%s", err, out)
	}
	if n := c.wpnStatusWrites(); n != 0 {
		t.Errorf("the controller wrote WindowsProxyNode status %d times", n)
	}
}

func ptrTo[T any](v T) *T { return &v }

// peakWatch records, from a watch on every WindowsProxyNode, the largest number of nodes that
// were at once in some state.
type peakWatch struct {
	mu  sync.Mutex
	max int
}

// watchPeak watches every WindowsProxyNode until the test ends, counting those in is.
func watchPeak(t *testing.T, is func(*winproxyv1alpha1.WindowsProxyNode) bool) *peakWatch {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(context.Background(), &winproxyv1alpha1.WindowsProxyNodeList{})
	if err != nil {
		t.Fatal(err)
	}
	pw := &peakWatch{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		in := map[string]bool{}
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*winproxyv1alpha1.WindowsProxyNode)
			if !ok {
				continue
			}
			in[n.Name] = is(n)
			count := 0
			for _, v := range in {
				if v {
					count++
				}
			}
			pw.mu.Lock()
			pw.max = max(pw.max, count)
			pw.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return pw
}

func (pw *peakWatch) peak() int {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.max
}

// watchInFlight records the most nodes at once on a hash other than their old one and not
// programmed for it.
func watchInFlight(t *testing.T, old map[string]string) *peakWatch {
	return watchPeak(t, func(n *winproxyv1alpha1.WindowsProxyNode) bool {
		programmed, _ := agentReport(n)
		return n.Spec.Hash != old[n.Name] && !programmed
	})
}

func rolloutNodes(prefix string, n int) []nodeSpec {
	specs := make([]nodeSpec, n)
	for i := range specs {
		specs[i] = nodeSpec{name: fmt.Sprintf("%s%d", prefix, i), kubelet: "v1.33.1"}
	}
	return specs
}

func TestRolloutMaxUnavailableOne(t *testing.T) {
	startController(t)
	startAgents(t, "paced-")
	t.Cleanup(func() { cleanup(t) })
	createNodes(t, rolloutNodes("paced-", 5)...)
	createConfig(t, testbuild.Config("paced"))
	waitReady(t, "paced")

	old := hashes(t)
	iw := watchInFlight(t, old)
	updateConfig(t, "paced", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.HealthCheck.ForwardVIP = true })
	cfg := waitReady(t, "paced")
	if cfg.Status.Nodes.Updated != 5 {
		t.Errorf("nodes = %+v, want all 5 updated", cfg.Status.Nodes)
	}
	for name, h := range hashes(t) {
		if h == old[name] {
			t.Errorf("%s still has its old config", name)
		}
	}
	if m := iw.peak(); m != 1 {
		t.Errorf("at most %d nodes were on the new config and not programmed at once, want exactly 1", m)
	}
	waitEvents(t, "paced", configevents.RolloutStarted, configevents.RolloutCompleted)
}

// waitEvents waits for events with the given reasons about config name.
func waitEvents(t *testing.T, name string, reasons ...string) {
	t.Helper()
	eventually(t, waitTimeout, "events "+strings.Join(reasons, ", "), func() (bool, string) {
		var list eventsv1.EventList
		if err := env.Client.List(context.Background(), &list); err != nil {
			return false, err.Error()
		}
		seen := map[string]bool{}
		for _, e := range list.Items {
			if e.Regarding.Name == name {
				seen[e.Reason] = true
			}
		}
		for _, r := range reasons {
			if !seen[r] {
				return false, fmt.Sprintf("seen %v", seen)
			}
		}
		return true, ""
	})
}

func TestRolloutStallsPausesAndSurvivesRestart(t *testing.T) {
	c := startController(t)
	ag := startAgents(t, "stall-")
	t.Cleanup(func() { cleanup(t) })
	createNodes(t, rolloutNodes("stall-", 4)...)
	createConfig(t, testbuild.Config("stall", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Rollout.ProgressDeadlineSeconds = 10 }))
	waitReady(t, "stall")

	// stall-0 is first in line and reports Degraded for the new config: the rollout stops there.
	v1 := hashes(t)
	ag.set("stall-0", degrades)
	updateConfig(t, "stall", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Sync.PeriodSeconds = 60 })
	cfg := waitCondition(t, "stall", winproxyv1alpha1.ConditionProgressing, metav1.ConditionFalse, winproxyv1alpha1.ReasonRolloutStalled)
	if msg := cond(cfg, winproxyv1alpha1.ConditionProgressing).Message; !strings.Contains(msg, "node stall-0 reported Degraded") {
		t.Errorf("Progressing message %q does not name stall-0", msg)
	}
	if p := cfg.Status.FailingNodes; len(p) != 1 || p[0].Name != "stall-0" || p[0].Reason != winproxyv1alpha1.ReasonNodeDegraded {
		t.Errorf("failingNodes = %+v", p)
	}
	waitEvents(t, "stall", configevents.RolloutStalled)
	assertHashes(t, v1, "stall-1", "stall-2", "stall-3")

	// The node recovers: the rollout goes on and completes.
	ag.set("stall-0", programs)
	waitReady(t, "stall")

	// Paused: a new config moves no node until unpaused.
	v2 := hashes(t)
	updateConfig(t, "stall", func(c *winproxyv1alpha1.WindowsProxyConfig) {
		c.Spec.Rollout.Paused = true
		c.Spec.Sync.PeriodSeconds = 90
	})
	waitCondition(t, "stall", winproxyv1alpha1.ConditionProgressing, metav1.ConditionFalse, winproxyv1alpha1.ReasonRolloutPaused)
	assertHashes(t, v2, "stall-0", "stall-1", "stall-2", "stall-3")

	// Unpaused with stall-1 silent: stall-0 programs, stall-1 never reports and misses the
	// deadline. The controller restarts in between; the rollout state is read back from objects.
	ag.set("stall-1", silent)
	updateConfig(t, "stall", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Rollout.Paused = false })
	eventually(t, waitTimeout, "stall-1 on the new config", func() (bool, string) {
		h := hashes(t)
		return h["stall-1"] != v2["stall-1"] && h["stall-0"] != v2["stall-0"], fmt.Sprintf("%v", h)
	})
	c.stop()
	c = startController(t)
	c.clock.advance(11 * time.Second)
	// The silent node's agent wakes up enough to touch its status (not to program), which
	// triggers a reconcile at once instead of at the deadline's real time.
	touchStatus(t, "stall-1")
	cfg = waitCondition(t, "stall", winproxyv1alpha1.ConditionProgressing, metav1.ConditionFalse, winproxyv1alpha1.ReasonRolloutStalled)
	if p := cfg.Status.FailingNodes; len(p) != 1 || p[0].Name != "stall-1" || p[0].Reason != winproxyv1alpha1.ReasonProgressDeadlineExceeded {
		t.Errorf("failingNodes = %+v, want stall-1 ProgressDeadlineExceeded", p)
	}
	assertHashes(t, v2, "stall-2", "stall-3")
	if n := c.wpnStatusWrites(); n != 0 {
		t.Errorf("the controller wrote WindowsProxyNode status %d times", n)
	}
}

// assertHashes fails unless each named node still has its hash in want.
func assertHashes(t *testing.T, want map[string]string, nodes ...string) {
	t.Helper()
	got := hashes(t)
	for _, n := range nodes {
		if got[n] != want[n] {
			t.Errorf("%s moved to %s, want it left on %s", n, got[n], want[n])
		}
	}
}

// touchStatus writes a condition the controller does not read into a node's status.
func touchStatus(t *testing.T, name string) {
	t.Helper()
	w := wpns(t)[name]
	before := w.DeepCopy()
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: winproxyv1alpha1.ConditionNetworkReady, Status: metav1.ConditionFalse, Reason: winproxyv1alpha1.ReasonNetworkNotFound, Message: "test"})
	if err := env.Client.Status().Patch(context.Background(), w, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

func TestConflictsResolveByAgeAndMoveOnDeletion(t *testing.T) {
	startController(t)
	startAgents(t, "conflict-")
	t.Cleanup(func() { cleanup(t) })
	createNodes(t,
		nodeSpec{name: "conflict-a1", kubelet: "v1.34.0", labels: map[string]string{"pool": "a"}},
		nodeSpec{name: "conflict-a2", kubelet: "v1.34.0", labels: map[string]string{"pool": "a"}},
		nodeSpec{name: "conflict-b1", kubelet: "v1.34.0", labels: map[string]string{"pool": "b"}},
	)
	// Same second or not, "a-older" wins: created first, and first by name.
	createConfig(t, testbuild.Config("a-older", testbuild.Selecting(map[string]string{"pool": "a"})))
	waitReady(t, "a-older")
	createConfig(t, testbuild.Config("b-newer", testbuild.DSR()))
	cfg := waitCondition(t, "b-newer", winproxyv1alpha1.ConditionConflicted, metav1.ConditionTrue, winproxyv1alpha1.ReasonNodesClaimedByOlderConfig)
	if diff := cmp.Diff([]string{"conflict-a1", "conflict-a2"}, cfg.Status.ConflictingNodes); diff != "" {
		t.Errorf("conflictingNodes (-want,+got):\n%s", diff)
	}
	if msg := cond(cfg, winproxyv1alpha1.ConditionConflicted).Message; !strings.Contains(msg, "conflict-a1 (owned by a-older)") {
		t.Errorf("Conflicted message %q does not name the owner", msg)
	}
	waitReady(t, "b-newer")
	owners := func() map[string]string {
		out := map[string]string{}
		for n, w := range wpns(t) {
			out[n] = w.Spec.ConfigName
		}
		return out
	}
	if diff := cmp.Diff(map[string]string{"conflict-a1": "a-older", "conflict-a2": "a-older", "conflict-b1": "b-newer"}, owners()); diff != "" {
		t.Errorf("owners (-want,+got):\n%s", diff)
	}
	if c := cond(getConfig(t, "a-older"), winproxyv1alpha1.ConditionConflicted); c.Status != metav1.ConditionFalse {
		t.Errorf("the older config reports %+v", c)
	}
	waitEvents(t, "b-newer", configevents.Conflict)

	// The older config goes: its nodes move to the newer one.
	if err := env.Client.Delete(context.Background(), testbuild.Config("a-older")); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitTimeout, "every node owned by b-newer", func() (bool, string) {
		o := owners()
		return cmp.Equal(map[string]string{"conflict-a1": "b-newer", "conflict-a2": "b-newer", "conflict-b1": "b-newer"}, o), fmt.Sprintf("%v", o)
	})
	waitCondition(t, "b-newer", winproxyv1alpha1.ConditionConflicted, metav1.ConditionFalse, winproxyv1alpha1.ReasonAsExpected)
	cfg = waitReady(t, "b-newer")
	if cfg.Status.Nodes.Selected != 3 || len(cfg.Status.ConflictingNodes) != 0 {
		t.Errorf("status after the move: %+v %v", cfg.Status.Nodes, cfg.Status.ConflictingNodes)
	}
	for n, w := range wpns(t) {
		if !w.Spec.Proxy.EnableDSR || len(w.OwnerReferences) != 1 || w.OwnerReferences[0].Name != "b-newer" {
			t.Errorf("%s: DSR %t, owners %+v", n, w.Spec.Proxy.EnableDSR, w.OwnerReferences)
		}
	}
}

func TestCleanup(t *testing.T) {
	startController(t)
	startAgents(t, "clean-")
	t.Cleanup(func() { cleanup(t) })
	createNodes(t, rolloutNodes("clean-", 3)...)
	createConfig(t, testbuild.Config("clean", testbuild.Selecting(map[string]string{winproxyv1alpha1.OSLabel: "windows"})))
	waitReady(t, "clean")
	w := wpns(t)["clean-0"]
	if !metav1.IsControlledBy(w, getConfig(t, "clean")) {
		t.Errorf("clean-0 owner references %+v do not name the config as controller", w.OwnerReferences)
	}

	ctx := context.Background()
	if err := env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "clean-0"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitTimeout, "clean-0's WindowsProxyNode deleted with its node", func() (bool, string) {
		_, ok := wpns(t)["clean-0"]
		return !ok, ""
	})

	// A node that stops being selected (its OS label changes) loses its WindowsProxyNode.
	n := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "clean-1"}, n); err != nil {
		t.Fatal(err)
	}
	n.Labels[winproxyv1alpha1.OSLabel] = "linux"
	if err := env.Client.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitTimeout, "clean-1's WindowsProxyNode deleted once unselected", func() (bool, string) {
		_, ok := wpns(t)["clean-1"]
		return !ok, ""
	})
	eventually(t, waitTimeout, "one node selected", func() (bool, string) {
		cfg := getConfig(t, "clean")
		return cfg.Status.Nodes.Selected == 1 && cond(cfg, winproxyv1alpha1.ConditionReady).Status == metav1.ConditionTrue, fmt.Sprintf("%+v", cfg.Status.Nodes)
	})

	if err := env.Client.Delete(ctx, testbuild.Config("clean")); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitTimeout, "every WindowsProxyNode deleted with the config", func() (bool, string) {
		ws := wpns(t)
		return len(ws) == 0, fmt.Sprintf("%d left", len(ws))
	})
}

// consistently fails if cond stops holding within d.
func consistently(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if ok, detail := cond(); !ok {
			t.Fatalf("%s stopped holding: %s", what, detail)
		}
	}
}

// configNames returns the config of each WindowsProxyNode.
func configNames(t testing.TB) map[string]string {
	out := map[string]string{}
	for n, w := range wpns(t) {
		out[n] = w.Spec.ConfigName
	}
	return out
}

func TestInvalidSelectorKeepsHeldNodesAndTakeoverIsPaced(t *testing.T) {
	startController(t)
	startAgents(t, "typo-")
	t.Cleanup(func() { cleanup(t) })
	specs := rolloutNodes("typo-", 3)
	for i := range specs {
		specs[i].kubelet, specs[i].labels = "v1.34.1", map[string]string{"pool": "x"}
	}
	createNodes(t, specs...)
	createConfig(t, testbuild.Config("typo-a", testbuild.Selecting(map[string]string{"pool": "x"})))
	waitReady(t, "typo-a")
	createConfig(t, testbuild.Config("typo-b", testbuild.Selecting(map[string]string{"pool": "x"}), testbuild.DSR()))
	waitCondition(t, "typo-b", winproxyv1alpha1.ConditionConflicted, metav1.ConditionTrue, winproxyv1alpha1.ReasonNodesClaimedByOlderConfig)
	allA := map[string]string{"typo-0": "typo-a", "typo-1": "typo-a", "typo-2": "typo-a"}

	// A typo in the older config's selector: it keeps its nodes, unchanged, and says why.
	old := hashes(t)
	updateConfig(t, "typo-a", func(c *winproxyv1alpha1.WindowsProxyConfig) {
		c.Spec.NodeSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pool", Operator: "Bogus"}}}
	})
	cfg := waitCondition(t, "typo-a", winproxyv1alpha1.ConditionAccepted, metav1.ConditionFalse, winproxyv1alpha1.ReasonInvalidNodeSelector)
	if cfg.Status.Nodes.Selected != 3 || cond(cfg, winproxyv1alpha1.ConditionProgressing).Reason != winproxyv1alpha1.ReasonInvalidNodeSelector {
		t.Errorf("typo-a: nodes %+v, Progressing %+v", cfg.Status.Nodes, cond(cfg, winproxyv1alpha1.ConditionProgressing))
	}
	consistently(t, 2*time.Second, "typo-a holding its nodes", func() (bool, string) {
		got := configNames(t)
		b := getConfig(t, "typo-b")
		return cmp.Equal(allA, got) && len(b.Status.ConflictingNodes) == 3, fmt.Sprintf("owners %v, typo-b conflicting %v", got, b.Status.ConflictingNodes)
	})
	assertHashes(t, old, "typo-0", "typo-1", "typo-2")

	// Fixed to select other nodes: typo-b takes the nodes over one at a time, as a rollout.
	iw := watchInFlight(t, old)
	updateConfig(t, "typo-a", testbuild.Selecting(map[string]string{"pool": "y"}))
	eventually(t, waitTimeout, "every node owned by typo-b", func() (bool, string) {
		got := configNames(t)
		return cmp.Equal(map[string]string{"typo-0": "typo-b", "typo-1": "typo-b", "typo-2": "typo-b"}, got), fmt.Sprintf("%v", got)
	})
	cfg = waitReady(t, "typo-b")
	if cfg.Status.Nodes.Updated != 3 || len(cfg.Status.ConflictingNodes) != 0 {
		t.Errorf("typo-b after the takeover: %+v, conflicting %v", cfg.Status.Nodes, cfg.Status.ConflictingNodes)
	}
	if m := iw.peak(); m != 1 {
		t.Errorf("at most %d nodes were taken over and not programmed at once, want exactly 1 (maxUnavailable 1)", m)
	}
	for n, w := range wpns(t) {
		if !w.Spec.Proxy.EnableDSR || !metav1.IsControlledBy(w, getConfig(t, "typo-b")) {
			t.Errorf("%s: DSR %t, owners %+v", n, w.Spec.Proxy.EnableDSR, w.OwnerReferences)
		}
	}
}

// TestLapseAfterRolloutIsNotAStall: weeks after a rollout, a node stops being Programmed for a
// while (the CNI recreates its HNS network). The config is not Ready, but its rollout did not
// stall, also for a controller that restarted since.
func TestLapseAfterRolloutIsNotAStall(t *testing.T) {
	c := startController(t)
	ag := startAgents(t, "lapse-")
	t.Cleanup(func() { cleanup(t) })
	createNodes(t, rolloutNodes("lapse-", 2)...)
	createConfig(t, testbuild.Config("lapse", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Rollout.ProgressDeadlineSeconds = 10 }))
	waitReady(t, "lapse")
	eventually(t, waitTimeout, "both nodes report their hash programmed", func() (bool, string) {
		ws := wpns(t)
		for _, w := range ws {
			if w.Status.ProgrammedHash != w.Spec.Hash {
				return false, fmt.Sprintf("%s: programmedHash %q", w.Name, w.Status.ProgrammedHash)
			}
		}
		return len(ws) == 2, fmt.Sprintf("%d nodes", len(ws))
	})

	c.stop()
	c = startController(t)
	c.clock.advance(30 * 24 * time.Hour)
	ag.set("lapse-0", waits)
	cfg := waitCondition(t, "lapse", winproxyv1alpha1.ConditionReady, metav1.ConditionFalse, winproxyv1alpha1.ReasonNodesNotProgrammed)
	consistently(t, 2*time.Second, "a finished rollout", func() (bool, string) {
		cfg = getConfig(t, "lapse")
		p := cond(cfg, winproxyv1alpha1.ConditionProgressing)
		return p.Reason == winproxyv1alpha1.ReasonRolloutComplete && len(cfg.Status.FailingNodes) == 0,
			fmt.Sprintf("Progressing %s: %s; failingNodes %+v", p.Reason, p.Message, cfg.Status.FailingNodes)
	})
	if msg := cond(cfg, winproxyv1alpha1.ConditionReady).Message; !strings.Contains(msg, "waiting for lapse-0") {
		t.Errorf("Ready message %q does not name lapse-0", msg)
	}
	var events eventsv1.EventList
	if err := env.Client.List(context.Background(), &events); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Regarding.Name == "lapse" && e.Reason == configevents.RolloutStalled {
			t.Errorf("event %s: %s", e.Reason, e.Note)
		}
	}

	ag.set("lapse-0", programs)
	waitReady(t, "lapse")
}
