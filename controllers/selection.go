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
	name    string
	created metav1.Time
	// claims reports whether the config wants node.
	claims func(node *corev1.Node) bool
	// holds reports whether node's WindowsProxyNode belongs to the config.
	holds func(node *corev1.Node) bool
}

// claimants returns every config as a claimant, oldest first (creationTimestamp, then name): the
// order in which they claim nodes. unreadable are the configs the controller cannot decode, and
// holders maps a node name to the config its WindowsProxyNode belongs to. A config whose selector
// is invalid, or that cannot be read at all, keeps claiming the nodes it holds: bad input in an
// older config must not hand its nodes to a newer one all at once.
func claimants(configs []winproxyv1alpha1.WindowsProxyConfig, unreadable []metav1.ObjectMeta, holders map[string]string) []claimant {
	holds := func(name string) func(*corev1.Node) bool {
		return func(n *corev1.Node) bool { return holders[n.Name] == name }
	}
	out := make([]claimant, 0, len(configs)+len(unreadable))
	for i := range configs {
		name := configs[i].Name
		c := claimant{name: name, created: configs[i].CreationTimestamp, claims: holds(name), holds: holds(name)}
		if sel, err := selector(&configs[i]); err == nil {
			c.claims = func(n *corev1.Node) bool { return sel.Matches(labels.Set(n.Labels)) }
		}
		out = append(out, c)
	}
	for _, m := range unreadable {
		out = append(out, claimant{name: m.Name, created: m.CreationTimestamp, claims: holds(m.Name), holds: holds(m.Name)})
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

// owner returns the oldest claimant that claims node, or "" when none does. creationTimestamp
// counts whole seconds, so two configs created in the same second are equally old: among those,
// the one that already holds the node keeps it (the name decides only for a node nobody holds),
// so that a newer config never takes a node over just because its name sorts first.
func owner(node *corev1.Node, sorted []claimant) string {
	if !isWindows(node) {
		return ""
	}
	for i, c := range sorted {
		if !c.claims(node) {
			continue
		}
		for _, tied := range sorted[i:] {
			if !tied.created.Equal(&c.created) {
				break
			}
			if tied.claims(node) && tied.holds(node) {
				return tied.name
			}
		}
		return c.name
	}
	return ""
}

// conflict is a node a config claims that an older config owns.
type conflict struct {
	node, owner string
}

// partition splits the Windows nodes that self (one of sorted) claims into those it owns and
// those an older config owns, both sorted by name.
func partition(self string, nodes []corev1.Node, sorted []claimant) (owned []*corev1.Node, conflicts []conflict) {
	at := slices.IndexFunc(sorted, func(c claimant) bool { return c.name == self })
	if at < 0 {
		return nil, nil
	}
	claims := sorted[at].claims
	for i := range nodes {
		n := &nodes[i]
		if !isWindows(n) || !claims(n) {
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
