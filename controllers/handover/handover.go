// Package handover decides how a node changes hands between configs: at the pace of the config
// that takes it over, also when the config that held it is deleted. Two things would otherwise
// move every node at once:
//
//   - the garbage collector deletes the WindowsProxyNodes of a deleted config, and the next
//     config creates new ones at once (a node without a config gets one immediately). So a config
//     that claims a node another config holds adds itself to that node's WindowsProxyNode as a
//     standby owner (an owner reference that is not the controller): the garbage collector
//     deletes an object only when all its owners are gone, and removes the deleted owner's
//     reference instead;
//   - the controller itself deleted a deleted config's WindowsProxyNodes. Now it deletes only
//     those whose node no config claims, and leaves the others to the claiming config, which takes
//     them over like any node another config holds: one rollout step at a time.
//
// The same rule adopts or deletes a WindowsProxyNode whose config never existed or is long gone.
// It is pure: the controller writes the owner references it returns.
package handover

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/selection"
)

// StandbyChanges returns the WindowsProxyNodes cfg must add itself to as a standby owner (another
// config holds them and cfg claims their node) and those it must leave (it claims their node no
// more). all are every WindowsProxyNode by name; owned and conflicts are the nodes cfg owns and
// those it claims that an older config owns (selection.Partition).
func StandbyChanges(cfg *winproxyv1alpha1.WindowsProxyConfig, all map[string]*winproxyv1alpha1.WindowsProxyNode, owned []*corev1.Node, conflicts []selection.Conflict) (add, remove []*winproxyv1alpha1.WindowsProxyNode) {
	claimed := make(map[string]bool, len(owned)+len(conflicts))
	for _, n := range owned {
		claimed[n.Name] = true
	}
	for _, c := range conflicts {
		claimed[c.Node] = true
	}
	for name, w := range all {
		switch {
		case claimed[name] && w.Spec.ConfigName != cfg.Name && !IsStandby(w, cfg.UID):
			add = append(add, w)
		case !claimed[name] && IsStandby(w, cfg.UID):
			remove = append(remove, w)
		}
	}
	return add, remove
}

// IsStandby reports whether w lists the config with uid as an owner that is not its controller.
func IsStandby(w *winproxyv1alpha1.WindowsProxyNode, uid types.UID) bool {
	return slices.ContainsFunc(w.OwnerReferences, isStandbyRef(uid))
}

// WithoutStandby returns owners without the standby reference of the config with uid.
func WithoutStandby(owners []metav1.OwnerReference, uid types.UID) []metav1.OwnerReference {
	return slices.DeleteFunc(owners, isStandbyRef(uid))
}

func isStandbyRef(uid types.UID) func(metav1.OwnerReference) bool {
	return func(o metav1.OwnerReference) bool { return o.UID == uid && (o.Controller == nil || !*o.Controller) }
}
