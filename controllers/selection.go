package controllers

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
)

// claimant is a config competing for nodes.
type claimant struct {
	name     string
	created  metav1.Time
	selector labels.Selector
}

// claimants returns the configs whose selector is valid, oldest first (creationTimestamp, then
// name): the order in which they claim nodes.
func claimants(configs []winproxyv1alpha1.WindowsProxyConfig) []claimant {
	out := make([]claimant, 0, len(configs))
	for i := range configs {
		sel, err := selector(&configs[i])
		if err != nil {
			continue
		}
		out = append(out, claimant{name: configs[i].Name, created: configs[i].CreationTimestamp, selector: sel})
	}
	slices.SortFunc(out, func(a, b claimant) int {
		if c := a.created.Compare(b.created.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	return out
}

// selector is the config's node selector; nil selects every node.
func selector(cfg *winproxyv1alpha1.WindowsProxyConfig) (labels.Selector, error) {
	if cfg.Spec.NodeSelector == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(cfg.Spec.NodeSelector)
}

// isWindows reports whether node may be selected at all: a Linux node never is.
func isWindows(node *corev1.Node) bool {
	return node.Labels[winproxyv1alpha1.OSLabel] == "windows"
}

// owner returns the oldest claimant that selects node, or "" when none does.
func owner(node *corev1.Node, sorted []claimant) string {
	if !isWindows(node) {
		return ""
	}
	set := labels.Set(node.Labels)
	for _, c := range sorted {
		if c.selector.Matches(set) {
			return c.name
		}
	}
	return ""
}

// conflict is a node a config selects that an older config owns.
type conflict struct {
	node, owner string
}

// partition splits the Windows nodes that sel selects into those self owns and those an older
// config owns, both sorted by name.
func partition(self string, sel labels.Selector, nodes []corev1.Node, sorted []claimant) (owned []*corev1.Node, conflicts []conflict) {
	for i := range nodes {
		n := &nodes[i]
		if !isWindows(n) || !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		if o := owner(n, sorted); o == self {
			owned = append(owned, n)
		} else {
			conflicts = append(conflicts, conflict{node: n.Name, owner: o})
		}
	}
	slices.SortFunc(owned, func(a, b *corev1.Node) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(conflicts, func(a, b conflict) int { return cmp.Compare(a.node, b.node) })
	return owned, conflicts
}
