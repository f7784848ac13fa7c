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

// TestWritesOutlastSlowWatches: a cache that still shows a version older than the write, the one
// it replaced or one in between (an agent's status report the watch delivers first), has not
// caught up, however long after the write: a loaded apiserver delivers a large rollout's watch
// events tens of seconds late, and forgetting the write then made the controller write again.
func TestWritesOutlastSlowWatches(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	r := NewWrites[*winproxyv1alpha1.WindowsProxyNode](clk)
	r.Record("10", wpnAt("replaced", "12", "new"))
	r.Record("10", wpnAt("between", "12", "new"))
	clk.SetTime(clk.Now().Add(10 * TTL))
	for _, cached := range []*winproxyv1alpha1.WindowsProxyNode{wpnAt("replaced", "10", "old"), wpnAt("between", "11", "old")} {
		if w, ok := r.Fresh(cached); !ok || w.Spec.Hash != "new" {
			t.Errorf("Fresh(%s at %s) = %v, %t; want the written object", cached.Name, cached.ResourceVersion, w, ok)
		}
	}
	if _, ok := r.Fresh(wpnAt("between", "13", "new")); ok {
		t.Error("Fresh() stood in for a cache past the write")
	}
	if _, ok := r.Fresh(wpnAt("between", "11", "old")); ok {
		t.Error("a write the cache caught up on was kept")
	}
}

// TestWritesOfAnotherObject: an object deleted and created again by someone else (another UID) is
// not the one written, whatever its version.
func TestWritesOfAnotherObject(t *testing.T) {
	r := NewWrites[*winproxyv1alpha1.WindowsProxyNode](clocktesting.NewFakePassiveClock(time.Now()))
	written := wpnAt("node", "12", "new")
	written.UID = "first"
	r.Record("10", written)
	cached := wpnAt("node", "11", "other")
	cached.UID = "second"
	if _, ok := r.Fresh(cached); ok {
		t.Error("Fresh() stood in for another object of the same name")
	}
}

// TestWritesExpire: a create the cache never shows (its object was deleted at once) stands in for
// the cache until TTL, then never again; so does a write whose versions cannot be compared.
func TestWritesExpire(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	r := NewWrites[*winproxyv1alpha1.WindowsProxyNode](clk)
	r.Record("", wpnAt("created", "2", "new"))
	r.Record("a", wpnAt("opaque", "b", "new"))
	clk.SetTime(clk.Now().Add(TTL))
	byName := map[string]*winproxyv1alpha1.WindowsProxyNode{"opaque": wpnAt("opaque", "a", "old")}
	r.Freshen(byName)
	if len(byName) != 2 || byName["created"] == nil || byName["opaque"].Spec.Hash != "new" {
		t.Fatalf("writes TTL old no longer stood in for the cache: %v", byName)
	}
	clk.SetTime(clk.Now().Add(time.Second))
	byName = map[string]*winproxyv1alpha1.WindowsProxyNode{"opaque": wpnAt("opaque", "a", "old")}
	r.Freshen(byName)
	if len(byName) != 1 || byName["opaque"].Spec.Hash != "old" {
		t.Errorf("writes older than TTL stood in for the cache: %v", byName)
	}
	if len(r.m) != 0 {
		t.Errorf("expired writes were kept: %v", slices.Collect(maps.Keys(r.m)))
	}
}
