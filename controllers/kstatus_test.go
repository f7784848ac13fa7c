//go:build !windows

package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/configevents"
	"github.com/winproxy/winproxy/internal/testbuild"
)

// kstatusOf is what kstatus, and so Flux, Argo CD and helm --wait, read from config name now.
func kstatusOf(t testing.TB, name string) *status.Result {
	t.Helper()
	return kstatusOfKind(t, configGVK, name)
}

// kstatusOfKind is what kstatus reads from the object of kind gvk named name. The object is read
// unstructured, as those tools do, so that it works for one no typed client can decode too.
func kstatusOfKind(t testing.TB, gvk schema.GroupVersionKind, name string) *status.Result {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, u); err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// waitKstatus waits until kstatus reads want from config name.
func waitKstatus(t *testing.T, name string, want status.Status) {
	t.Helper()
	eventually(t, waitTimeout, fmt.Sprintf("kstatus of %s %s", name, want), func() (bool, string) {
		res := kstatusOf(t, name)
		return res.Status == want, fmt.Sprintf("%s: %s", res.Status, res.Message)
	})
}

// eventsAbout returns the events regarding config name.
func eventsAbout(t *testing.T, name string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := env.Client.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(list.Items, func(e eventsv1.Event) bool { return e.Regarding.Name != name })
}

// waitEvent waits for an event about config name with type typ and reason whose note contains
// every one of notes, and returns it.
func waitEvent(t *testing.T, name, typ, reason string, notes ...string) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	eventually(t, waitTimeout, fmt.Sprintf("a %s event %s about %s", typ, reason, name), func() (bool, string) {
		var seen []string
		for _, e := range eventsAbout(t, name) {
			seen = append(seen, e.Type+"/"+e.Reason+": "+e.Note)
			if e.Type != typ || e.Reason != reason {
				continue
			}
			if !slices.ContainsFunc(notes, func(n string) bool { return !strings.Contains(e.Note, n) }) {
				found = e
				return true, ""
			}
		}
		return false, strings.Join(seen, "\n")
	})
	return found
}

// TestStatusIsTruthfulForTools walks a config through what tools must read right: a refused node
// (kstatus Failed, a Warning naming the node, no Normal "completed"), the fix (Current), a rollout
// under way (InProgress), a config whose nodes all belong to an older one (not Ready, Failed, a
// Warning naming the older config) and one that selects nothing (Ready, Current).
func TestStatusIsTruthfulForTools(t *testing.T) {
	startController(t)
	ag := startAgents(t, "tool-")
	t.Cleanup(func() { cleanup(t) })
	createNodes(t,
		nodeSpec{name: "tool-132", kubelet: "v1.32.4"},
		nodeSpec{name: "tool-133", kubelet: "v1.33.2"},
		nodeSpec{name: "tool-134", kubelet: "v1.34.1"},
	)

	// DSR without WinDSR: the 1.32 node refuses the config; the others program it.
	createConfig(t, testbuild.Config("tool", testbuild.DSR()))
	cfg := waitCondition(t, "tool", winproxyv1alpha1.ConditionStalled, metav1.ConditionTrue, winproxyv1alpha1.ReasonNodesFailing)
	if msg := cond(cfg, winproxyv1alpha1.ConditionStalled).Message; !strings.Contains(msg, "tool-132 (FeatureGateDisabled)") {
		t.Errorf("Stalled message %q does not name the refused node", msg)
	}
	waitKstatus(t, "tool", status.FailedStatus)
	e := waitEvent(t, "tool", "Warning", winproxyv1alpha1.ReasonFeatureGateDisabled, "Node tool-132:", "WinDSR feature gate not enabled")
	if e.Related == nil || e.Related.Kind != "Node" || e.Related.Name != "tool-132" {
		t.Errorf("the refused node's event is related to %+v, want Node tool-132", e.Related)
	}
	waitEvent(t, "tool", "Warning", configevents.RolloutCompletedWithFailures, "tool-132 (FeatureGateDisabled)")
	for _, e := range eventsAbout(t, "tool") {
		if e.Reason == configevents.RolloutCompleted {
			t.Errorf("a Normal %s event although a node refused the config: %s", e.Reason, e.Note)
		}
	}

	// Fixed: Ready and Current, Reconciling and Stalled False.
	updateConfig(t, "tool", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.FeatureGates = map[string]bool{"WinDSR": true} })
	cfg = waitReady(t, "tool")
	for _, typ := range []string{winproxyv1alpha1.ConditionReconciling, winproxyv1alpha1.ConditionStalled} {
		if c := cond(cfg, typ); c.Status != metav1.ConditionFalse || c.ObservedGeneration != cfg.Generation {
			t.Errorf("%s = %s/%s at generation %d, want False at %d", typ, c.Status, c.Reason, c.ObservedGeneration, cfg.Generation)
		}
	}
	waitKstatus(t, "tool", status.CurrentStatus)

	// A rollout under way (one agent does not answer yet): InProgress.
	ag.set("tool-132", silent)
	updateConfig(t, "tool", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Sync.PeriodSeconds = 45 })
	waitCondition(t, "tool", winproxyv1alpha1.ConditionReconciling, metav1.ConditionTrue, winproxyv1alpha1.ReasonRollingOut)
	waitKstatus(t, "tool", status.InProgressStatus)
	ag.set("tool-132", programs)
	waitReady(t, "tool")
	waitKstatus(t, "tool", status.CurrentStatus)

	// A newer config selecting the same nodes manages nothing: not Ready, Failed, and loud.
	createConfig(t, testbuild.Config("tool-shadow"))
	cfg = waitCondition(t, "tool-shadow", winproxyv1alpha1.ConditionReady, metav1.ConditionFalse, winproxyv1alpha1.ReasonAllNodesClaimed)
	if msg := cond(cfg, winproxyv1alpha1.ConditionReady).Message; !strings.Contains(msg, "belong to older configs, so this config manages none: tool (3)") {
		t.Errorf("Ready message %q does not name the older config", msg)
	}
	if c := cond(cfg, winproxyv1alpha1.ConditionStalled); c.Status != metav1.ConditionTrue || c.Reason != winproxyv1alpha1.ReasonAllNodesClaimed {
		t.Errorf("Stalled = %s/%s, want True/AllNodesClaimed", c.Status, c.Reason)
	}
	waitKstatus(t, "tool-shadow", status.FailedStatus)
	waitEvent(t, "tool-shadow", "Warning", winproxyv1alpha1.ReasonAllNodesClaimed, "tool (3)")

	// A config no Windows node matches is Ready: there is nothing to wait for.
	createConfig(t, testbuild.Config("tool-none", testbuild.Selecting(map[string]string{"pool": "none"})))
	waitCondition(t, "tool-none", winproxyv1alpha1.ConditionReady, metav1.ConditionTrue, winproxyv1alpha1.ReasonNoNodesSelected)
	waitKstatus(t, "tool-none", status.CurrentStatus)
}

// TestStalledRolloutIsFailedForTools: a node that reports Degraded for the new config stalls the
// rollout, which kstatus reads as Failed; once it recovers the config is Current again.
func TestStalledRolloutIsFailedForTools(t *testing.T) {
	startController(t)
	ag := startAgents(t, "tstall-")
	t.Cleanup(func() { cleanup(t) })
	createNodes(t, rolloutNodes("tstall-", 2)...)
	createConfig(t, testbuild.Config("tstall"))
	waitReady(t, "tstall")
	ag.set("tstall-0", degrades)
	updateConfig(t, "tstall", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Sync.PeriodSeconds = 50 })
	waitCondition(t, "tstall", winproxyv1alpha1.ConditionStalled, metav1.ConditionTrue, winproxyv1alpha1.ReasonRolloutStalled)
	waitKstatus(t, "tstall", status.FailedStatus)
	waitEvent(t, "tstall", "Warning", winproxyv1alpha1.ReasonNodeDegraded, "Node tstall-0:")
	ag.set("tstall-0", programs)
	waitReady(t, "tstall")
	waitKstatus(t, "tstall", status.CurrentStatus)
}
