package controllers

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
)

func wpnAt(name, rv, hash string) *winproxyv1alpha1.WindowsProxyNode {
	return &winproxyv1alpha1.WindowsProxyNode{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv},
		Spec:       winproxyv1alpha1.WindowsProxyNodeSpec{Hash: hash},
	}
}

func TestRecentWrites(t *testing.T) {
	var r recentWrites[*winproxyv1alpha1.WindowsProxyNode]
	r.record("1", wpnAt("stale", "2", "new"))     // cache still at 1
	r.record("1", wpnAt("caught-up", "2", "new")) // cache at 2
	r.record("1", wpnAt("moved-on", "2", "new"))  // cache at 3 (an agent wrote status)
	r.record("", wpnAt("created", "5", "new"))    // cache has not seen it
	r.record("1", wpnAt("deleted", "2", "new"))   // cache no longer has it
	r.record("1", wpnAt("forgotten", "2", "new"))
	r.forget("forgotten")

	byName := map[string]*winproxyv1alpha1.WindowsProxyNode{
		"stale":     wpnAt("stale", "1", "old"),
		"caught-up": wpnAt("caught-up", "2", "new"),
		"moved-on":  wpnAt("moved-on", "3", "new"),
		"forgotten": wpnAt("forgotten", "1", "old"),
	}
	r.freshen(byName)
	got := map[string]string{}
	for n, w := range byName {
		got[n] = w.ResourceVersion + "/" + w.Spec.Hash
	}
	want := map[string]string{"stale": "2/new", "caught-up": "2/new", "moved-on": "3/new", "created": "5/new", "forgotten": "1/old"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("freshen (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"created", "stale"}, slices.Sorted(maps.Keys(r.m))); diff != "" {
		t.Errorf("remembered writes (-want,+got):\n%s", diff)
	}
	if w, ok := r.fresh(wpnAt("stale", "1", "old")); !ok || w.Spec.Hash != "new" {
		t.Errorf("fresh(stale) = %v, %t; want the written object", w, ok)
	}
	if _, ok := r.fresh(wpnAt("stale", "7", "newer")); ok {
		t.Error("fresh() stood in for a cache that moved on")
	}
}
