package recent

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
)

func wpnAt(name, rv, hash string) *winproxyv1alpha1.WindowsProxyNode {
	return &winproxyv1alpha1.WindowsProxyNode{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv},
		Spec:       winproxyv1alpha1.WindowsProxyNodeSpec{Hash: hash},
	}
}

func TestWrites(t *testing.T) {
	r := NewWrites[*winproxyv1alpha1.WindowsProxyNode](clocktesting.NewFakePassiveClock(time.Now()))
	r.Record("1", wpnAt("stale", "2", "new"))     // cache still at 1
	r.Record("1", wpnAt("caught-up", "2", "new")) // cache at 2
	r.Record("1", wpnAt("moved-on", "2", "new"))  // cache at 3 (an agent wrote status)
	r.Record("", wpnAt("created", "5", "new"))    // cache has not seen it
	r.Record("1", wpnAt("deleted", "2", "new"))   // cache no longer has it
	r.Record("1", wpnAt("forgotten", "2", "new"))
	r.Forget("forgotten")

	byName := map[string]*winproxyv1alpha1.WindowsProxyNode{
		"stale":     wpnAt("stale", "1", "old"),
		"caught-up": wpnAt("caught-up", "2", "new"),
		"moved-on":  wpnAt("moved-on", "3", "new"),
		"forgotten": wpnAt("forgotten", "1", "old"),
	}
	r.Freshen(byName)
	got := map[string]string{}
	for n, w := range byName {
		got[n] = w.ResourceVersion + "/" + w.Spec.Hash
	}
	want := map[string]string{"stale": "2/new", "caught-up": "2/new", "moved-on": "3/new", "created": "5/new", "forgotten": "1/old"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Freshen (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"created", "stale"}, slices.Sorted(maps.Keys(r.m))); diff != "" {
		t.Errorf("remembered writes (-want,+got):\n%s", diff)
	}
	if w, ok := r.Fresh(wpnAt("stale", "1", "old")); !ok || w.Spec.Hash != "new" {
		t.Errorf("Fresh(stale) = %v, %t; want the written object", w, ok)
	}
	if _, ok := r.Fresh(wpnAt("stale", "7", "newer")); ok {
		t.Error("Fresh() stood in for a cache that moved on")
	}
}

// TestWritesExpire: a write the cache never shows (its object was deleted at once, the watch
// lost it) stands in for the cache until TTL, then never again.
func TestWritesExpire(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	r := NewWrites[*winproxyv1alpha1.WindowsProxyNode](clk)
	r.Record("1", wpnAt("lagging", "2", "new"))
	clk.SetTime(clk.Now().Add(TTL))
	if _, ok := r.Fresh(wpnAt("lagging", "1", "old")); !ok {
		t.Fatal("a write TTL old no longer stood in for the cache")
	}
	clk.SetTime(clk.Now().Add(time.Second))
	if _, ok := r.Fresh(wpnAt("lagging", "1", "old")); ok {
		t.Error("a write older than TTL stood in for the cache")
	}
	if len(r.m) != 0 {
		t.Errorf("an expired write was kept: %v", slices.Collect(maps.Keys(r.m)))
	}
}
