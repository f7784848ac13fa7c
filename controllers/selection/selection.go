// Package selection decides which config manages each Windows node. Several WindowsProxyConfigs
// may select the same node; the oldest one that claims it owns it, so that creating a config never
// takes nodes away from one that already runs them. It is a pure function of the configs, the nodes
// and who holds each node now (the config its WindowsProxyNode names): the controller reads those
// from its cache on every reconcile and keeps no decision of its own, so ownership survives a
// restart and the rules are table-tested here without a control plane.
package selection

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
)

// Claimant is a config competing for nodes. Claimants builds them; the controller only passes
// the sorted list on to Owner and Partition.
type Claimant struct {
	name    string
	created metav1.Time
	// claims reports whether the config wants node.
	claims func(node *corev1.Node) bool
	// holds reports whether node's WindowsProxyNode belongs to the config.
	holds func(node *corev1.Node) bool
}

// Claimants returns every config as a claimant, oldest first (creationTimestamp, then name): the
// order in which they claim nodes. unreadable are the configs the controller cannot decode, and
// holders maps a node name to the config its WindowsProxyNode belongs to. A config whose selector
// is invalid, or that cannot be read at all, keeps claiming the nodes it holds: bad input in an
// older config must not hand its nodes to a newer one all at once.
func Claimants(configs []winproxyv1alpha1.WindowsProxyConfig, unreadable []metav1.ObjectMeta, holders map[string]string) []Claimant {
	holds := func(name string) func(*corev1.Node) bool {
		return func(n *corev1.Node) bool { return holders[n.Name] == name }
	}
	out := make([]Claimant, 0, len(configs)+len(unreadable))
	for i := range configs {
		name := configs[i].Name
		c := Claimant{name: name, created: configs[i].CreationTimestamp, claims: holds(name), holds: holds(name)}
		if sel, err := Selector(&configs[i]); err == nil {
			c.claims = func(n *corev1.Node) bool { return sel.Matches(labels.Set(n.Labels)) }
		}
		out = append(out, c)
	}
	for _, m := range unreadable {
		out = append(out, Claimant{name: m.Name, created: m.CreationTimestamp, claims: holds(m.Name), holds: holds(m.Name)})
	}
	slices.SortFunc(out, func(a, b Claimant) int {
		if c := a.created.Compare(b.created.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	return out
}

// Selector is the config's node selector; nil selects every node. The controller reports its
// error on the config (Accepted=False, InvalidNodeSelector); Claimants treats such a config as
// claiming only what it holds.
func Selector(cfg *winproxyv1alpha1.WindowsProxyConfig) (labels.Selector, error) {
	if cfg.Spec.NodeSelector == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(cfg.Spec.NodeSelector)
}

// isWindows reports whether node may be selected at all: a Linux node never is.
func isWindows(node *corev1.Node) bool {
	return node.Labels[winproxyv1alpha1.OSLabel] == "windows"
}

// Owner returns the oldest claimant that claims node, or "" when none does. creationTimestamp
// counts whole seconds, so two configs created in the same second are equally old: among those,
// the one that already holds the node keeps it (the name decides only for a node nobody holds),
// so that a newer config never takes a node over just because its name sorts first.
func Owner(node *corev1.Node, sorted []Claimant) string {
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

// Conflict is a node a config claims that an older config owns: the config reports it
// (Conflicted) and stands by as an owner of the node's WindowsProxyNode, to take it over when the
// older config lets it go.
type Conflict struct {
	// Node is the node's name; Owner the name of the config that owns it.
	Node, Owner string
}

// Partition splits the Windows nodes that self (one of sorted) claims into those it owns and
// those an older config owns, both sorted by name.
func Partition(self string, nodes []corev1.Node, sorted []Claimant) (owned []*corev1.Node, conflicts []Conflict) {
	at := slices.IndexFunc(sorted, func(c Claimant) bool { return c.name == self })
	if at < 0 {
		return nil, nil
	}
	claims := sorted[at].claims
	for i := range nodes {
		n := &nodes[i]
		if !isWindows(n) || !claims(n) {
			continue
		}
		if o := Owner(n, sorted); o == self {
			owned = append(owned, n)
		} else {
			conflicts = append(conflicts, Conflict{Node: n.Name, Owner: o})
		}
	}
	slices.SortFunc(owned, func(a, b *corev1.Node) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(conflicts, func(a, b Conflict) int { return cmp.Compare(a.Node, b.Node) })
	return owned, conflicts
}
