package handover

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/selection"
)

// wpn is node's WindowsProxyNode held by config holder, with standby owners standby (UIDs).
func wpn(node, holder string, standby ...types.UID) *winproxyv1alpha1.WindowsProxyNode {
	w := &winproxyv1alpha1.WindowsProxyNode{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: winproxyv1alpha1.WindowsProxyNodeSpec{ConfigName: holder}}
	w.OwnerReferences = append(w.OwnerReferences, metav1.OwnerReference{Name: holder, UID: types.UID(holder), Controller: ptr.To(true)})
	for _, uid := range standby {
		w.OwnerReferences = append(w.OwnerReferences, metav1.OwnerReference{Name: string(uid), UID: uid})
	}
	return w
}

func TestStandbyChanges(t *testing.T) {
	cfg := &winproxyv1alpha1.WindowsProxyConfig{ObjectMeta: metav1.ObjectMeta{Name: "new", UID: "new"}}
	all := map[string]*winproxyv1alpha1.WindowsProxyNode{
		"mine":             wpn("mine", "new"),
		"claimed":          wpn("claimed", "old"),
		"claimed-standby":  wpn("claimed-standby", "old", "new"),
		"owned-by-old":     wpn("owned-by-old", "old"),
		"released":         wpn("released", "old", "new"),
		"unrelated":        wpn("unrelated", "old"),
		"unrelated-others": wpn("unrelated-others", "old", "third"),
	}
	owned := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}, {ObjectMeta: metav1.ObjectMeta{Name: "owned-by-old"}}}
	conflicts := []selection.Conflict{{Node: "claimed", Owner: "old"}, {Node: "claimed-standby", Owner: "old"}}
	add, remove := StandbyChanges(cfg, all, owned, conflicts)
	names := func(ws []*winproxyv1alpha1.WindowsProxyNode) []string {
		var out []string
		for _, w := range ws {
			out = append(out, w.Name)
		}
		slices.Sort(out)
		return out
	}
	// A node cfg owns but another config still holds (its takeover waits for the rollout) gets
	// the standby reference too: the holder's deletion must not delete it.
	if diff := cmp.Diff([]string{"claimed", "owned-by-old"}, names(add)); diff != "" {
		t.Errorf("standby owners to add (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"released"}, names(remove)); diff != "" {
		t.Errorf("standby owners to remove (-want,+got):\n%s", diff)
	}
}

func TestIsStandbyAndWithoutStandby(t *testing.T) {
	w := wpn("n", "old", "new")
	if !IsStandby(w, "new") || IsStandby(w, "old") || IsStandby(w, "third") {
		t.Errorf("IsStandby: new %t, old (the controller) %t, third (no owner) %t; want true, false, false",
			IsStandby(w, "new"), IsStandby(w, "old"), IsStandby(w, "third"))
	}
	if got := WithoutStandby(slices.Clone(w.OwnerReferences), "new"); len(got) != 1 || got[0].UID != "old" {
		t.Errorf("WithoutStandby(new) = %v, want only the controller", got)
	}
	if got := WithoutStandby(slices.Clone(w.OwnerReferences), "old"); len(got) != 2 {
		t.Errorf("WithoutStandby(old) = %v removed the controller reference", got)
	}
}
