package selection

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func testConfig(name string, age time.Duration, sel map[string]string) winproxyv1alpha1.WindowsProxyConfig {
	c := winproxyv1alpha1.WindowsProxyConfig{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(-age))}}
	if sel != nil {
		c.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: sel}
	}
	return c
}

func testNode(name string, lbls map[string]string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
}

func TestPartition(t *testing.T) {
	win := func(extra ...string) map[string]string {
		l := map[string]string{winproxyv1alpha1.OSLabel: "windows"}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	nodes := []corev1.Node{
		testNode("linux-pool", map[string]string{winproxyv1alpha1.OSLabel: "linux", "pool": "a"}),
		testNode("unlabelled", map[string]string{"pool": "a"}),
		testNode("win-b", win("pool", "b")),
		testNode("win-a2", win("pool", "a")),
		testNode("win-a1", win("pool", "a")),
	}
	type result struct {
		Owned     []string
		Conflicts []Conflict
	}
	tests := []struct {
		name    string
		configs []winproxyv1alpha1.WindowsProxyConfig
		// unreadable are configs the controller cannot decode.
		unreadable []metav1.ObjectMeta
		holders    map[string]string
		self       string
		want       result
	}{
		{
			name:    "no selector selects every Windows node, never a Linux one",
			configs: []winproxyv1alpha1.WindowsProxyConfig{testConfig("all", time.Hour, nil)},
			self:    "all",
			want:    result{Owned: []string{"win-a1", "win-a2", "win-b"}},
		},
		{
			name:    "a selector matching Linux nodes still selects only Windows ones",
			configs: []winproxyv1alpha1.WindowsProxyConfig{testConfig("pool-a", time.Hour, map[string]string{"pool": "a"})},
			self:    "pool-a",
			want:    result{Owned: []string{"win-a1", "win-a2"}},
		},
		{
			name: "the older config wins a shared node",
			configs: []winproxyv1alpha1.WindowsProxyConfig{
				testConfig("young", time.Minute, nil),
				testConfig("old", time.Hour, map[string]string{"pool": "a"}),
			},
			self: "young",
			want: result{Owned: []string{"win-b"}, Conflicts: []Conflict{{Node: "win-a1", Owner: "old"}, {Node: "win-a2", Owner: "old"}}},
		},
		{
			name: "the older config is unaffected by the younger",
			configs: []winproxyv1alpha1.WindowsProxyConfig{
				testConfig("young", time.Minute, nil),
				testConfig("old", time.Hour, map[string]string{"pool": "a"}),
			},
			self: "old",
			want: result{Owned: []string{"win-a1", "win-a2"}},
		},
		{
			name: "same age: the name decides",
			configs: []winproxyv1alpha1.WindowsProxyConfig{
				testConfig("beta", time.Hour, nil),
				testConfig("alpha", time.Hour, nil),
			},
			self: "beta",
			want: result{Conflicts: []Conflict{{Node: "win-a1", Owner: "alpha"}, {Node: "win-a2", Owner: "alpha"}, {Node: "win-b", Owner: "alpha"}}},
		},
		{
			// creationTimestamp counts seconds: a config created in the same second as the one
			// holding a node must not take it over because its name sorts first.
			name: "same age: the holder keeps its node, the name decides the others",
			configs: []winproxyv1alpha1.WindowsProxyConfig{
				testConfig("beta", time.Hour, nil),
				testConfig("alpha", time.Hour, nil),
			},
			holders: map[string]string{"win-a1": "beta"},
			self:    "beta",
			want:    result{Owned: []string{"win-a1"}, Conflicts: []Conflict{{Node: "win-a2", Owner: "alpha"}, {Node: "win-b", Owner: "alpha"}}},
		},
		{
			name: "same age: a holder that no longer selects the node gives it up",
			configs: []winproxyv1alpha1.WindowsProxyConfig{
				testConfig("beta", time.Hour, map[string]string{"pool": "b"}),
				testConfig("alpha", time.Hour, nil),
			},
			holders: map[string]string{"win-a1": "beta"},
			self:    "alpha",
			want:    result{Owned: []string{"win-a1", "win-a2", "win-b"}},
		},
		{
			name:    "a config with an invalid selector that holds nothing claims nothing",
			configs: []winproxyv1alpha1.WindowsProxyConfig{broken(2 * time.Hour), testConfig("ok", time.Hour, nil)},
			self:    "ok",
			want:    result{Owned: []string{"win-a1", "win-a2", "win-b"}},
		},
		{
			name:    "an older config with an invalid selector keeps the nodes it holds",
			configs: []winproxyv1alpha1.WindowsProxyConfig{broken(2 * time.Hour), testConfig("ok", time.Hour, nil)},
			holders: map[string]string{"win-a1": "broken", "win-a2": "broken", "win-b": "ok"},
			self:    "ok",
			want:    result{Owned: []string{"win-b"}, Conflicts: []Conflict{{Node: "win-a1", Owner: "broken"}, {Node: "win-a2", Owner: "broken"}}},
		},
		{
			name:    "the config with the invalid selector owns what it holds",
			configs: []winproxyv1alpha1.WindowsProxyConfig{broken(2 * time.Hour), testConfig("ok", time.Hour, nil)},
			holders: map[string]string{"win-a1": "broken", "win-a2": "broken", "win-b": "ok", "linux-pool": "broken"},
			self:    "broken",
			want:    result{Owned: []string{"win-a1", "win-a2"}},
		},
		{
			name:    "a younger config with an invalid selector loses what an older one selects",
			configs: []winproxyv1alpha1.WindowsProxyConfig{broken(time.Minute), testConfig("old", time.Hour, map[string]string{"pool": "a"})},
			holders: map[string]string{"win-a1": "broken", "win-b": "broken"},
			self:    "broken",
			want:    result{Owned: []string{"win-b"}, Conflicts: []Conflict{{Node: "win-a1", Owner: "old"}}},
		},
		{
			name:       "an older config the controller cannot read keeps the nodes it holds and claims no other",
			configs:    []winproxyv1alpha1.WindowsProxyConfig{testConfig("ok", time.Hour, nil)},
			unreadable: []metav1.ObjectMeta{{Name: "unreadable", CreationTimestamp: metav1.NewTime(t0.Add(-2 * time.Hour))}},
			holders:    map[string]string{"win-a1": "unreadable"},
			self:       "ok",
			want:       result{Owned: []string{"win-a2", "win-b"}, Conflicts: []Conflict{{Node: "win-a1", Owner: "unreadable"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			owned, conflicts := Partition(tt.self, nodes, Claimants(tt.configs, tt.unreadable, tt.holders))
			got := result{Conflicts: conflicts}
			for _, n := range owned {
				got.Owned = append(got.Owned, n.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Partition() (-want,+got):\n%s", diff)
			}
		})
	}
}

// broken is a config named "broken" whose selector cannot be parsed.
func broken(age time.Duration) winproxyv1alpha1.WindowsProxyConfig {
	c := testConfig("broken", age, nil)
	c.Spec.NodeSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pool", Operator: "Bogus"}}}
	return c
}

func TestOwnerIgnoresLinux(t *testing.T) {
	n := testNode("l", map[string]string{winproxyv1alpha1.OSLabel: "linux"})
	if o := Owner(&n, Claimants([]winproxyv1alpha1.WindowsProxyConfig{testConfig("all", time.Hour, nil)}, nil, nil)); o != "" {
		t.Errorf("Owner() = %q, want none for a Linux node", o)
	}
}
