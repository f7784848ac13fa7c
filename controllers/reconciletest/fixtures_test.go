package reconciletest

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers"
	"github.com/winproxy/winproxy/internal/nodesummary"
	"github.com/winproxy/winproxy/internal/resolve"
	"github.com/winproxy/winproxy/internal/testbuild"
)

// node is a Windows node with a pod CIDR, an InternalIP and a 1.34 kubelet, as a kubelet and the
// node IPAM controller set them, and labels.
func node(name string, i int, labels map[string]string) *corev1.Node {
	n := testbuild.Node(name, testbuild.Labels(labels), testbuild.Kubelet("v1.34.1"),
		testbuild.PodCIDRs(fmt.Sprintf("10.244.%d.0/24", i)), testbuild.InternalIPs(fmt.Sprintf("192.168.0.%d", i)))
	n.UID = types.UID("node-" + name)
	return n
}

// config is a WindowsProxyConfig at generation gen, created at t0+created, with the CRD's
// defaults, its UID its name, and opts.
func config(name string, gen int64, created time.Duration, opts ...func(*winproxyv1alpha1.WindowsProxyConfig)) *winproxyv1alpha1.WindowsProxyConfig {
	c := testbuild.Config(name, testbuild.Defaulted(), testbuild.CreatedAt(t0.Add(created)))
	c.UID, c.Generation = types.UID(name), gen
	c.Spec.Rollout.ProgressDeadlineSeconds = 300
	for _, o := range opts {
		o(c)
	}
	return c
}

// syncPeriod sets the spec's sync period: the change of spec the cases roll out.
func syncPeriod(p int32) func(*winproxyv1alpha1.WindowsProxyConfig) {
	return func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Sync.PeriodSeconds = p }
}

func selecting(labels map[string]string) func(*winproxyv1alpha1.WindowsProxyConfig) {
	return func(c *winproxyv1alpha1.WindowsProxyConfig) { testbuild.Selecting(labels)(c) }
}

// lastGood records spec, at generation gen, as the config's last good spec: what every node
// programmed before the current spec.
func lastGood(gen int64, spec *winproxyv1alpha1.WindowsProxyConfigSpec) func(*winproxyv1alpha1.WindowsProxyConfig) {
	return func(c *winproxyv1alpha1.WindowsProxyConfig) {
		c.Status.LastGood = &winproxyv1alpha1.LastGoodConfig{Generation: gen, Spec: *spec.DeepCopy()}
	}
}

func autoRollback(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.Rollout.AutoRollback = true }

// wpnOption changes a WindowsProxyNode that wpn builds.
type wpnOption func(*winproxyv1alpha1.WindowsProxyNode)

// wpn is n's WindowsProxyNode, written by the controller for spec (of config cfg, which is its
// controller) an hour before t0, at generation 1, and its agent's report: Programmed for it
// unless opts say otherwise.
func wpn(n *corev1.Node, cfg *winproxyv1alpha1.WindowsProxyConfig, spec *winproxyv1alpha1.WindowsProxyConfigSpec, opts ...wpnOption) *winproxyv1alpha1.WindowsProxyNode {
	proxy, err := resolve.Resolve(spec, n)
	if err != nil {
		panic(err)
	}
	w := &winproxyv1alpha1.WindowsProxyNode{
		ObjectMeta: metav1.ObjectMeta{
			Name: n.Name, UID: types.UID("wpn-" + n.Name), Generation: 1, CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
			Annotations: map[string]string{controllers.UpdatedAtAnnotation: t0.Add(-time.Hour).Format(time.RFC3339)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: winproxyv1alpha1.GroupVersion.String(), Kind: "WindowsProxyConfig", Name: cfg.Name, UID: cfg.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: winproxyv1alpha1.WindowsProxyNodeSpec{ConfigName: cfg.Name, Hash: resolve.Hash(&proxy), Proxy: proxy},
	}
	report(metav1.ConditionTrue, winproxyv1alpha1.ReasonSynced)(w)
	for _, o := range opts {
		o(w)
	}
	return w
}

// report makes the agent report Programmed with status and reason for the node's current spec,
// and Degraded when it is not programmed for a reason other than waiting.
func report(programmed metav1.ConditionStatus, reason string) wpnOption {
	return func(w *winproxyv1alpha1.WindowsProxyNode) {
		w.Status.ObservedHash, w.Status.ObservedGeneration = w.Spec.Hash, w.Generation
		if programmed == metav1.ConditionTrue {
			w.Status.ProgrammedHash = w.Spec.Hash
		}
		degraded, degradedReason := metav1.ConditionFalse, winproxyv1alpha1.ReasonAsExpected
		if programmed == metav1.ConditionFalse && reason == winproxyv1alpha1.ReasonSyncFailed {
			degraded, degradedReason = metav1.ConditionTrue, reason
		}
		at := metav1.NewTime(updatedAt(w))
		for _, c := range []metav1.Condition{
			{Type: winproxyv1alpha1.ConditionProgrammed, Status: programmed, Reason: reason},
			{Type: winproxyv1alpha1.ConditionDegraded, Status: degraded, Reason: degradedReason},
		} {
			c.Message, c.ObservedGeneration, c.LastTransitionTime = "the agent's report", w.Generation, at
			meta.SetStatusCondition(&w.Status.Conditions, c)
		}
		nodesummary.Set(&w.Status, w, at.Time)
	}
}

// unreported is a node whose agent has not acted on its spec yet.
func unreported(w *winproxyv1alpha1.WindowsProxyNode) {
	w.Status = winproxyv1alpha1.WindowsProxyNodeStatus{}
}

// updated sets when the controller wrote the spec, relative to t0.
func updated(d time.Duration) wpnOption {
	return func(w *winproxyv1alpha1.WindowsProxyNode) {
		w.Annotations[controllers.UpdatedAtAnnotation] = t0.Add(d).Format(time.RFC3339)
	}
}

func updatedAt(w *winproxyv1alpha1.WindowsProxyNode) time.Time {
	at, _ := time.Parse(time.RFC3339, w.Annotations[controllers.UpdatedAtAnnotation])
	return at
}

// standby adds cfg as a standby owner.
func standby(cfg *winproxyv1alpha1.WindowsProxyConfig) wpnOption {
	return func(w *winproxyv1alpha1.WindowsProxyNode) {
		w.OwnerReferences = append(w.OwnerReferences, metav1.OwnerReference{
			APIVersion: winproxyv1alpha1.GroupVersion.String(), Kind: "WindowsProxyConfig", Name: cfg.Name, UID: cfg.UID,
		})
	}
}

// alive sets AgentAlive as the heartbeat reconciler writes it, at t0 plus at.
func alive(status metav1.ConditionStatus, reason string, at time.Duration) wpnOption {
	return func(w *winproxyv1alpha1.WindowsProxyNode) {
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
			Type: winproxyv1alpha1.ConditionAgentAlive, Status: status, Reason: reason, Message: "the heartbeat",
			ObservedGeneration: w.Generation, LastTransitionTime: metav1.NewTime(t0.Add(at)),
		})
		if status == metav1.ConditionFalse {
			meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
				Type: winproxyv1alpha1.ConditionProgrammed, Status: metav1.ConditionUnknown, Reason: reason, Message: "the heartbeat",
				ObservedGeneration: w.Generation, LastTransitionTime: metav1.NewTime(t0.Add(at)),
			})
		}
		nodesummary.Set(&w.Status, w, t0.Add(at))
	}
}

// handEdited changes the spec under its hash, as a person with kubectl edit would.
func handEdited(w *winproxyv1alpha1.WindowsProxyNode) {
	w.Spec.Proxy.EnableDSR = !w.Spec.Proxy.EnableDSR
	w.Generation++
}
