package controllers

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/configevents"
	"github.com/winproxy/winproxy/controllers/configstatus"
	"github.com/winproxy/winproxy/internal/conditions"
)

// WindowsProxyConfigs are read from the cache as unstructured objects and decoded one by one.
// A typed informer decodes a whole list at once: one object it cannot decode (a value stored
// before the CRD bounded it, say) fails every list, the cache never syncs, no config is
// reconciled any more and a restarted controller never becomes ready. Decoded one by one, such a
// config is reported (Stalled, reason InvalidSpec) and the others carry on. The configs are few,
// so decoding them on every reconcile costs little.

var configGVK = winproxyv1alpha1.GroupVersion.WithKind("WindowsProxyConfig")

// newConfigObject is an empty WindowsProxyConfig as the cache stores it.
func newConfigObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(configGVK)
	return u
}

// decodeConfig converts u into a WindowsProxyConfig, or says why it cannot.
func decodeConfig(u *unstructured.Unstructured) (*winproxyv1alpha1.WindowsProxyConfig, error) {
	cfg := &winproxyv1alpha1.WindowsProxyConfig{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// readConfigs lists every config: those that decode, and the metadata of those that do not.
func (r *WindowsProxyConfigReconciler) readConfigs(ctx context.Context) ([]winproxyv1alpha1.WindowsProxyConfig, []metav1.ObjectMeta, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(configGVK.GroupVersion().WithKind("WindowsProxyConfigList"))
	if err := r.configs.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, fmt.Errorf("listing WindowsProxyConfigs: %w", err)
	}
	configs := make([]winproxyv1alpha1.WindowsProxyConfig, 0, len(list.Items))
	var unreadable []metav1.ObjectMeta
	for i := range list.Items {
		u := &list.Items[i]
		cfg, err := decodeConfig(u)
		if err != nil {
			unreadable = append(unreadable, metav1.ObjectMeta{Name: u.GetName(), UID: u.GetUID(), CreationTimestamp: u.GetCreationTimestamp()})
			continue
		}
		configs = append(configs, *cfg)
	}
	return configs, unreadable, nil
}

// reportInvalidSpec writes, on a config the controller cannot decode, the conditions that say so.
// Nothing else of it can be trusted, so nothing else is written: the nodes it holds keep their
// config (see selection.Claimants) until the spec is fixed.
func (r *WindowsProxyConfigReconciler) reportInvalidSpec(ctx context.Context, u *unstructured.Unstructured, decodeErr error) error {
	var old winproxyv1alpha1.WindowsProxyConfigStatus
	if st, ok := u.Object["status"].(map[string]any); ok {
		// A status that cannot be decoded either is rewritten from scratch.
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(st, &old)
	}
	conds := configstatus.Undecodable(old.Conditions, u.GetName(), u.GetGeneration(), decodeErr, r.clock.Now())
	if equality.Semantic.DeepEqual(conds, old.Conditions) && old.ObservedGeneration == u.GetGeneration() {
		return nil
	}
	// The generation was observed: kstatus reads Stalled only on an observed generation.
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds, "observedGeneration": u.GetGeneration()}})
	if err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Cannot decode WindowsProxyConfig", "error", decodeErr.Error())
	if c := meta.FindStatusCondition(old.Conditions, winproxyv1alpha1.ConditionStalled); r.recorder != nil && (c == nil || c.Status != metav1.ConditionTrue || c.Reason != winproxyv1alpha1.ReasonInvalidSpec) {
		msg := meta.FindStatusCondition(conds, winproxyv1alpha1.ConditionStalled).Message
		r.recorder.Eventf(u, nil, corev1.EventTypeWarning, winproxyv1alpha1.ReasonInvalidSpec, configevents.ActionDecode, "%s", conditions.Truncate(msg, configevents.MaxNote))
	}
	if err := r.client.Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("reporting the unreadable spec of WindowsProxyConfig %s: %w", u.GetName(), err)
	}
	return nil
}
