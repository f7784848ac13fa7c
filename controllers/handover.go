package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/handover"
	"github.com/winproxy/winproxy/controllers/selection"
)

// writeStandby adds and removes s.config as a standby owner (see package handover). A node it took
// over in this reconcile is left alone: its reference is now the controller's.
func (r *WindowsProxyConfigReconciler) writeStandby(ctx context.Context, s *scope) []error {
	takenNow := func(w *winproxyv1alpha1.WindowsProxyNode) bool {
		cur := s.wpns[w.Name]
		return cur != nil && cur.Spec.ConfigName == s.config.Name
	}
	add := slices.DeleteFunc(slices.Clone(s.standby), takenNow)
	errs := parallel(len(add), func(i int) error { return r.setStandby(ctx, s.config, add[i], true) })
	return append(errs, parallel(len(s.unstandby), func(i int) error { return r.setStandby(ctx, s.config, s.unstandby[i], false) })...)
}

// setStandby adds cfg to existing's owners, or removes it, with an optimistic lock: the owners
// list is replaced as a whole, and the holding config may be changing it at the same time.
func (r *WindowsProxyConfigReconciler) setStandby(ctx context.Context, cfg *winproxyv1alpha1.WindowsProxyConfig, existing *winproxyv1alpha1.WindowsProxyNode, on bool) error {
	w := existing.DeepCopy()
	log := ctrl.LoggerFrom(ctx).WithValues("WindowsProxyNode", klog.KObj(w), "holder", w.Spec.ConfigName)
	if on {
		log.V(2).Info("Adding the config as standby owner of a WindowsProxyNode another config holds")
		if err := controllerutil.SetOwnerReference(cfg, w, r.client.Scheme()); err != nil {
			return err
		}
	} else {
		log.V(2).Info("Removing the config as standby owner of a WindowsProxyNode whose node it no longer claims")
		w.OwnerReferences = handover.WithoutStandby(w.OwnerReferences, cfg.UID)
	}
	if err := r.client.Patch(ctx, w, client.MergeFromWithOptions(existing, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("updating the owners of WindowsProxyNode %s: %w", w.Name, err)
	}
	r.recentNodes.Record(existing.ResourceVersion, w)
	return nil
}

// reconcileDelete handles the WindowsProxyNodes of a config that does not exist (any more): those
// whose node another config claims are left to it, which takes them over at its rollout pace;
// the others are deleted. The garbage collector would delete those through the owner
// references; doing it here also covers clusters (and envtest) without one, WindowsProxyNodes
// without owner references, and frees the nodes for the next config at once.
func (r *WindowsProxyConfigReconciler) reconcileDelete(ctx context.Context, name string) error {
	forgetMetrics(name)
	var mine winproxyv1alpha1.WindowsProxyNodeList
	if err := r.client.List(ctx, &mine, client.MatchingFields{configNameField: name}); err != nil {
		return fmt.Errorf("listing WindowsProxyNodes of deleted config %s: %w", name, err)
	}
	if len(mine.Items) == 0 {
		return nil
	}
	owners, err := r.nodeOwners(ctx)
	if err != nil {
		return err
	}
	var orphans []*winproxyv1alpha1.WindowsProxyNode
	for i := range mine.Items {
		w := &mine.Items[i]
		if o := owners[w.Name]; o != "" {
			ctrl.LoggerFrom(ctx).V(2).Info("Leaving the WindowsProxyNode of a deleted config to the config that claims its node", "WindowsProxyNode", klog.KObj(w), "claimant", o)
			continue
		}
		orphans = append(orphans, w)
	}
	return errors.Join(parallel(len(orphans), func(i int) error { return r.deleteNode(ctx, orphans[i]) })...)
}

// nodeOwners maps each Windows node some config claims to the config that owns it.
func (r *WindowsProxyConfigReconciler) nodeOwners(ctx context.Context) (map[string]string, error) {
	configs, unreadable, err := r.readConfigs(ctx)
	if err != nil {
		return nil, err
	}
	var nodes corev1.NodeList
	if err := r.client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	var wpns winproxyv1alpha1.WindowsProxyNodeList
	if err := r.client.List(ctx, &wpns, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing WindowsProxyNodes: %w", err)
	}
	holders := make(map[string]string, len(wpns.Items))
	for i := range wpns.Items {
		holders[wpns.Items[i].Name] = wpns.Items[i].Spec.ConfigName
	}
	sorted := selection.Claimants(configs, unreadable, holders)
	out := map[string]string{}
	for i := range nodes.Items {
		if o := selection.Owner(&nodes.Items[i], sorted); o != "" {
			out[nodes.Items[i].Name] = o
		}
	}
	return out, nil
}
