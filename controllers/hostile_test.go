//go:build !windows

package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/configstatus"
	"github.com/winproxy/winproxy/controllers/handover"
	"github.com/winproxy/winproxy/internal/testbuild"
)

// These tests replay the hostile inputs of issue #11 that harmed the controller.

// withoutMaxUnavailableBound runs store with the CRD's CEL rule on rollout.maxUnavailable
// removed, as it was before it bounded the number: what store writes is what an older release
// let into etcd. The rule is back when it returns.
func withoutMaxUnavailableBound(t *testing.T, store func() error) {
	t.Helper()
	ctx := context.Background()
	key := client.ObjectKey{Name: "windowsproxyconfigs.winproxy.io"}
	rules := func(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.JSONSchemaProps {
		p := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["rollout"].Properties["maxUnavailable"]
		return &p
	}
	setRules := func(v apiextensionsv1.ValidationRules) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := env.Client.Get(ctx, key, crd); err != nil {
				return err
			}
			spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
			rollout := spec.Properties["rollout"]
			mu := rollout.Properties["maxUnavailable"]
			mu.XValidations = v
			rollout.Properties["maxUnavailable"] = mu
			spec.Properties["rollout"] = rollout
			crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
			return env.Client.Update(ctx, crd)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(ctx, key, crd); err != nil {
		t.Fatal(err)
	}
	saved := rules(crd).XValidations
	setRules(nil)
	eventually(t, waitTimeout, "the relaxed CRD to accept the write", func() (bool, string) {
		err := store()
		return err == nil, fmt.Sprint(err)
	})
	setRules(saved)
	probe := testbuild.Config("probe")
	probe.Spec.Rollout.MaxUnavailable = nil
	eventually(t, waitTimeout, "the CRD to bound maxUnavailable again", func() (bool, string) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "winproxy.io/v1alpha1", "kind": "WindowsProxyConfig",
			"metadata": map[string]any{"name": "probe"},
			"spec":     map[string]any{"network": map[string]any{"name": "cbr0"}, "rollout": map[string]any{"maxUnavailable": int64(2147483648)}},
		}}
		err := env.Client.Create(ctx, u, client.DryRunAll)
		return err != nil, "still accepted"
	})
}

// patchConfigJSON merge-patches config name, unstructured so that it works on a config no typed
// client can decode.
func patchConfigJSON(name, patch string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(configGVK)
	u.SetName(name)
	return env.Client.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// configConditions reads config name's conditions unstructured.
func configConditions(t *testing.T, name string) map[string]metav1.Condition {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(configGVK)
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, u); err != nil {
		t.Fatal(err)
	}
	out := map[string]metav1.Condition{}
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range list {
		m, _ := c.(map[string]any)
		typ, _ := m["type"].(string)
		st, _ := m["status"].(string)
		reason, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		out[typ] = metav1.Condition{Type: typ, Status: metav1.ConditionStatus(st), Reason: reason, Message: msg}
	}
	return out
}

// TestUndecodableConfigStopsNoOtherConfig: a config stored with maxUnavailable 2147483648 (before
// the CRD bounded it) cannot be decoded into Go. It used to fail the controller's whole cache of
// configs: nothing was reconciled any more and a restarted controller never became ready. Now it
// is reported Stalled (InvalidSpec), keeps the node it holds, and the others carry on, also after a
// restart.
func TestUndecodableConfigStopsNoOtherConfig(t *testing.T) {
	c := startController(t)
	startAgents(t, "dec-")
	t.Cleanup(func() { cleanup(t) })
	createNodes(t,
		nodeSpec{name: "dec-a", kubelet: "v1.34.1", labels: map[string]string{"pool": "a"}},
		nodeSpec{name: "dec-b", kubelet: "v1.34.1", labels: map[string]string{"pool": "b"}},
	)
	createConfig(t, testbuild.Config("dec-old", testbuild.Selecting(map[string]string{"pool": "a"})))
	waitReady(t, "dec-old")
	withoutMaxUnavailableBound(t, func() error {
		return patchConfigJSON("dec-old", `{"spec":{"rollout":{"maxUnavailable":2147483648}}}`)
	})

	eventually(t, waitTimeout, "dec-old reported Stalled with InvalidSpec", func() (bool, string) {
		s := configConditions(t, "dec-old")[winproxyv1alpha1.ConditionStalled]
		return s.Status == metav1.ConditionTrue && s.Reason == winproxyv1alpha1.ReasonInvalidSpec, fmt.Sprintf("%+v", s)
	})
	if msg := configConditions(t, "dec-old")[winproxyv1alpha1.ConditionStalled].Message; !strings.Contains(msg, "2147483648") {
		t.Errorf("Stalled message %q does not say what cannot be read", msg)
	}
	if res := kstatusOf(t, "dec-old"); res.Status != "Failed" {
		t.Errorf("kstatus of the unreadable config = %s (%s), want Failed", res.Status, res.Message)
	}
	waitEvent(t, "dec-old", "Warning", winproxyv1alpha1.ReasonInvalidSpec, "2147483648")

	// A newer config selecting both nodes gets the free one; the unreadable config keeps its own.
	createConfig(t, testbuild.Config("dec-new", testbuild.DSR()))
	cfg := waitReady(t, "dec-new")
	if cfg.Status.Nodes.Selected != 1 || !slices.Equal(cfg.Status.ConflictingNodes, []string{"dec-a"}) {
		t.Errorf("dec-new: nodes %+v, conflicting %v", cfg.Status.Nodes, cfg.Status.ConflictingNodes)
	}
	if got := configNames(t); !cmp.Equal(map[string]string{"dec-a": "dec-old", "dec-b": "dec-new"}, got) {
		t.Errorf("owners %v", got)
	}

	// A restarted controller becomes ready and reconciles the others.
	c.stop()
	startController(t)
	updateConfig(t, "dec-new", func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Sync.PeriodSeconds = 40 })
	waitReady(t, "dec-new")

	// Fixed, the old config is read again and Ready.
	if err := patchConfigJSON("dec-old", `{"spec":{"rollout":{"maxUnavailable":1}}}`); err != nil {
		t.Fatal(err)
	}
	waitReady(t, "dec-old")
}

// TestDeletingTheOlderConfigHandsNodesOverAtPace: when the older of two configs selecting the same
// nodes is deleted, the newer one takes the nodes over one rollout step at a time. It used to
// delete every node's WindowsProxyNode at once, so that the newer config created them all at once.
// The garbage collector (which envtest lacks) is emulated: it must leave the WindowsProxyNodes the
// newer config stands by for.
func TestDeletingTheOlderConfigHandsNodesOverAtPace(t *testing.T) {
	startController(t)
	startAgents(t, "ho-")
	t.Cleanup(func() { cleanup(t) })
	createNodes(t, rolloutNodes("ho-", 4)...)
	createConfig(t, testbuild.Config("ho-a-old"))
	waitReady(t, "ho-a-old")
	createConfig(t, testbuild.Config("ho-b-new", testbuild.DSR()))
	newer := waitCondition(t, "ho-b-new", winproxyv1alpha1.ConditionReady, metav1.ConditionFalse, winproxyv1alpha1.ReasonAllNodesClaimed)
	eventually(t, waitTimeout, "ho-b-new standing by on every node", func() (bool, string) {
		var missing []string
		for name, w := range wpns(t) {
			if !handover.IsStandby(w, newer.UID) {
				missing = append(missing, name)
			}
		}
		return len(missing) == 0, fmt.Sprintf("not on %v", missing)
	})

	old := hashes(t)
	iw := watchInFlight(t, old)
	if err := env.Client.Delete(context.Background(), testbuild.Config("ho-a-old")); err != nil {
		t.Fatal(err)
	}
	collectGarbage(t)
	eventually(t, waitTimeout, "every node owned by ho-b-new", func() (bool, string) {
		got := configNames(t)
		return cmp.Equal(map[string]string{"ho-0": "ho-b-new", "ho-1": "ho-b-new", "ho-2": "ho-b-new", "ho-3": "ho-b-new"}, got), fmt.Sprintf("%v", got)
	})
	cfg := waitReady(t, "ho-b-new")
	if cfg.Status.Nodes.Updated != 4 {
		t.Errorf("ho-b-new: %+v", cfg.Status.Nodes)
	}
	if m := iw.peak(); m != 1 {
		t.Errorf("at most %d nodes were handed over and not programmed at once, want exactly 1 (maxUnavailable 1)", m)
	}
	for n, w := range wpns(t) {
		if !w.Spec.Proxy.EnableDSR || !metav1.IsControlledBy(w, cfg) || len(w.OwnerReferences) != 1 {
			t.Errorf("%s: DSR %t, owners %+v", n, w.Spec.Proxy.EnableDSR, w.OwnerReferences)
		}
	}
}

// collectGarbage does what the garbage collector does once the configs are gone: a
// WindowsProxyNode none of whose owners exists is deleted; one that has an owner left loses the
// references to the deleted ones.
func collectGarbage(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var configs winproxyv1alpha1.WindowsProxyConfigList
	if err := env.Client.List(ctx, &configs); err != nil {
		t.Fatal(err)
	}
	live := map[types.UID]bool{}
	for _, c := range configs.Items {
		live[c.UID] = true
	}
	for name := range wpns(t) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			w := &winproxyv1alpha1.WindowsProxyNode{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, w); err != nil {
				return err
			}
			before := w.DeepCopy()
			w.OwnerReferences = slices.DeleteFunc(w.OwnerReferences, func(o metav1.OwnerReference) bool { return !live[o.UID] })
			switch {
			case len(before.OwnerReferences) == 0 || len(w.OwnerReferences) == len(before.OwnerReferences):
				return nil
			case len(w.OwnerReferences) == 0:
				return env.Client.Delete(ctx, w, client.Preconditions{ResourceVersion: &before.ResourceVersion})
			}
			return env.Client.Patch(ctx, w, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		})
		if client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
}

// TestNodeDataNeverFreezesStatus: a 40 KB winproxy.io/source-vip annotation used to end up whole in
// the config's Accepted message, beyond the API's 32 KB, so that no status could be written any
// more. Unusable source VIPs (loopback, a Service's ClusterIP) were programmed. Now
// each of those nodes is refused with a bounded message and a Warning, and the rest of the config
// works.
func TestNodeDataNeverFreezesStatus(t *testing.T) {
	startController(t)
	startAgents(t, "vip-")
	t.Cleanup(func() { cleanup(t) })
	ctx := context.Background()

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "vip-web", Namespace: "default"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}
	if err := env.Client.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, svc) })

	annotated := func(name, vip string) nodeSpec {
		return nodeSpec{name: name, kubelet: "v1.34.1", annotations: map[string]string{winproxyv1alpha1.SourceVIPAnnotation: vip}}
	}
	createNodes(t,
		annotated("vip-huge", strings.Repeat("x", 40*1024)),
		annotated("vip-loopback", "127.0.0.1"),
		annotated("vip-service", svc.Spec.ClusterIP),
		annotated("vip-good", "10.100.4.2"),
	)
	createConfig(t, testbuild.Config("vip", func(c *winproxyv1alpha1.WindowsProxyConfig) {
		c.Spec.Network = winproxyv1alpha1.NetworkSpec{Name: "vxlan0", Type: winproxyv1alpha1.NetworkTypeOverlay}
		c.Spec.Overlay = &winproxyv1alpha1.OverlaySpec{SourceVIP: winproxyv1alpha1.SourceVIPSpec{
			Strategy: winproxyv1alpha1.SourceVIPStrategyStatic, Static: &winproxyv1alpha1.SourceVIPStatic{},
		}}
	}))
	want := map[string]string{
		"vip-huge":     winproxyv1alpha1.ReasonSourceVIPUnavailable + `: source VIP "xxxxxxxx`,
		"vip-loopback": winproxyv1alpha1.ReasonSourceVIPUnusable + ": source VIP 127.0.0.1 is a loopback address",
		"vip-service":  winproxyv1alpha1.ReasonSourceVIPUnusable + ": source VIP " + svc.Spec.ClusterIP + " is already held by the ClusterIP of Service default/vip-web",
	}
	eventually(t, waitTimeout, "every bad node refused and the good one programmed", func() (bool, string) {
		cfg := getConfig(t, "vip")
		var bad []string
		for _, p := range cfg.Status.FailingNodes {
			if !strings.HasPrefix(p.Reason+": "+p.Message, want[p.Name]) || len(p.Message) > configstatus.MaxProblemMessage {
				bad = append(bad, p.Name+"/"+p.Reason+": "+p.Message[:min(len(p.Message), 120)])
			}
		}
		return len(cfg.Status.FailingNodes) == len(want) && len(bad) == 0 && cfg.Status.Nodes.Programmed == 1,
			fmt.Sprintf("nodes %+v, %d failing, unexpected %v", cfg.Status.Nodes, len(cfg.Status.FailingNodes), bad)
	})
	cfg := getConfig(t, "vip")
	for _, c := range cfg.Status.Conditions {
		if len(c.Message) > 4096 {
			t.Errorf("%s message is %d bytes: node data is not bounded", c.Type, len(c.Message))
		}
	}
	if w := wpns(t)["vip-good"]; w == nil || w.Spec.Proxy.SourceVIP == nil || w.Spec.Proxy.SourceVIP.Address != "10.100.4.2" {
		t.Errorf("vip-good's WindowsProxyNode: %+v", w)
	}
	for node, prefix := range want {
		reason, _, _ := strings.Cut(prefix, ":")
		waitEvent(t, "vip", "Warning", reason, "Node "+node+":")
	}
}

// TestHandEditedSpecIsRestored: a WindowsProxyNode spec edited by hand under its hash used to stay
// as edited while the config reported every node programmed. The controller owns the spec.
func TestHandEditedSpecIsRestored(t *testing.T) {
	startController(t)
	startAgents(t, "edit-")
	t.Cleanup(func() { cleanup(t) })
	createNodes(t, rolloutNodes("edit-", 2)...)
	createConfig(t, testbuild.Config("edit"))
	waitReady(t, "edit")
	ctx := context.Background()
	w := wpns(t)["edit-0"]
	want := w.Spec
	before := w.DeepCopy()
	w.Spec.Proxy.EnableDSR = true
	w.Spec.Proxy.HealthCheck.Port = 12345
	if err := env.Client.Patch(ctx, w, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitTimeout, "edit-0's spec restored", func() (bool, string) {
		got := wpns(t)["edit-0"].Spec
		return cmp.Equal(want, got), cmp.Diff(want, got)
	})
	cfg := waitReady(t, "edit")
	if cfg.Status.Nodes.Programmed != 2 {
		t.Errorf("nodes %+v", cfg.Status.Nodes)
	}
	gen := wpns(t)["edit-0"].Generation
	consistently(t, time.Second, "edit-0 left alone once restored", func() (bool, string) {
		g := wpns(t)["edit-0"].Generation
		return g == gen, fmt.Sprintf("generation %d -> %d", gen, g)
	})
}

// TestOrphanWindowsProxyNodesAreDeletedOrAdopted: a WindowsProxyNode naming a config that does not
// exist used to stay forever. Now it is deleted when no config selects its node, and taken over by
// the config that does.
func TestOrphanWindowsProxyNodesAreDeletedOrAdopted(t *testing.T) {
	startController(t)
	startAgents(t, "orph-")
	t.Cleanup(func() { cleanup(t) })
	createNodes(t,
		nodeSpec{name: "orph-free", kubelet: "v1.34.1"},
		nodeSpec{name: "orph-taken", kubelet: "v1.34.1", labels: map[string]string{"pool": "x"}},
	)
	ctx := context.Background()
	for _, name := range []string{"orph-free", "orph-taken"} {
		w := &winproxyv1alpha1.WindowsProxyNode{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: winproxyv1alpha1.WindowsProxyNodeSpec{ConfigName: "ghost", Hash: "0123456789abcdef",
				Proxy: winproxyv1alpha1.ResolvedProxyConfig{Network: winproxyv1alpha1.NetworkSpec{Name: "cbr0", Type: winproxyv1alpha1.NetworkTypeL2Bridge}}},
		}
		if err := env.Client.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	createConfig(t, testbuild.Config("orph", testbuild.Selecting(map[string]string{"pool": "x"})))
	eventually(t, waitTimeout, "the free orphan deleted, the selected one adopted", func() (bool, string) {
		got := configNames(t)
		return cmp.Equal(map[string]string{"orph-taken": "orph"}, got), fmt.Sprintf("%v", got)
	})
	cfg := waitReady(t, "orph")
	if !metav1.IsControlledBy(wpns(t)["orph-taken"], cfg) {
		t.Errorf("the adopted WindowsProxyNode's owners: %+v", wpns(t)["orph-taken"].OwnerReferences)
	}
}
