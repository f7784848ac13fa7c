package selection

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/testbuild"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// config is a config created age before t0.
func config(name string, age time.Duration, opts ...testbuild.ConfigOption) winproxyv1alpha1.WindowsProxyConfig {
	return *testbuild.Config(name, append(opts, testbuild.CreatedAt(t0.Add(-age)))...)
}

// pool selects the nodes of pool p.
func pool(p string) testbuild.ConfigOption { return testbuild.Selecting(map[string]string{"pool": p}) }

func TestPartition(t *testing.T) {
	inPool := func(p string) testbuild.NodeOption { return testbuild.Labels(map[string]string{"pool": p}) }
	nodes := []corev1.Node{
		*testbuild.Node("linux-pool", testbuild.OS("linux"), inPool("a")),
		*testbuild.Node("unlabelled", testbuild.OS(""), inPool("a")),
		*testbuild.Node("win-b", inPool("b")),
		*testbuild.Node("win-a2", inPool("a")),
		*testbuild.Node("win-a1", inPool("a")),
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
			configs: []winproxyv1alpha1.WindowsProxyConfig{config("all", time.Hour)},
			self:    "all",
			want:    result{Owned: []string{"win-a1", "win-a2", "win-b"}},
		},
		{
			name:    "a selector matching Linux nodes still selects only Windows ones",
			configs: []winproxyv1alpha1.WindowsProxyConfig{config("pool-a", time.Hour, pool("a"))},
			self:    "pool-a",
			want:    result{Owned: []string{"win-a1", "win-a2"}},
		},
		{
			name: "the older config wins a shared node",
			configs: []winproxyv1alpha1.WindowsProxyConfig{
				config("young", time.Minute),
				config("old", time.Hour, pool("a")),
			},
			self: "young",
			want: result{Owned: []string{"win-b"}, Conflicts: []Conflict{{Node: "win-a1", Owner: "old"}, {Node: "win-a2", Owner: "old"}}},
		},
		{
			name: "the older config is unaffected by the younger",
			configs: []winproxyv1alpha1.WindowsProxyConfig{
				config("young", time.Minute),
				config("old", time.Hour, pool("a")),
			},
			self: "old",
			want: result{Owned: []string{"win-a1", "win-a2"}},
		},
		{
			name: "same age: the name decides",
			configs: []winproxyv1alpha1.WindowsProxyConfig{
				config("beta", time.Hour),
				config("alpha", time.Hour),
			},
			self: "beta",
			want: result{Conflicts: []Conflict{{Node: "win-a1", Owner: "alpha"}, {Node: "win-a2", Owner: "alpha"}, {Node: "win-b", Owner: "alpha"}}},
		},
		{
			// creationTimestamp counts seconds: a config created in the same second as the one
			// holding a node must not take it over because its name sorts first.
			name: "same age: the holder keeps its node, the name decides the others",
			configs: []winproxyv1alpha1.WindowsProxyConfig{
				config("beta", time.Hour),
				config("alpha", time.Hour),
			},
			holders: map[string]string{"win-a1": "beta"},
			self:    "beta",
			want:    result{Owned: []string{"win-a1"}, Conflicts: []Conflict{{Node: "win-a2", Owner: "alpha"}, {Node: "win-b", Owner: "alpha"}}},
		},
		{
			name: "same age: a holder that no longer selects the node gives it up",
			configs: []winproxyv1alpha1.WindowsProxyConfig{
				config("beta", time.Hour, pool("b")),
				config("alpha", time.Hour),
			},
			holders: map[string]string{"win-a1": "beta"},
			self:    "alpha",
			want:    result{Owned: []string{"win-a1", "win-a2", "win-b"}},
		},
		{
			name:    "a config with an invalid selector that holds nothing claims nothing",
			configs: []winproxyv1alpha1.WindowsProxyConfig{broken(2 * time.Hour), config("ok", time.Hour)},
			self:    "ok",
			want:    result{Owned: []string{"win-a1", "win-a2", "win-b"}},
		},
		{
			name:    "an older config with an invalid selector keeps the nodes it holds",
			configs: []winproxyv1alpha1.WindowsProxyConfig{broken(2 * time.Hour), config("ok", time.Hour)},
			holders: map[string]string{"win-a1": "broken", "win-a2": "broken", "win-b": "ok"},
			self:    "ok",
			want:    result{Owned: []string{"win-b"}, Conflicts: []Conflict{{Node: "win-a1", Owner: "broken"}, {Node: "win-a2", Owner: "broken"}}},
		},
		{
			name:    "the config with the invalid selector owns what it holds",
			configs: []winproxyv1alpha1.WindowsProxyConfig{broken(2 * time.Hour), config("ok", time.Hour)},
			holders: map[string]string{"win-a1": "broken", "win-a2": "broken", "win-b": "ok", "linux-pool": "broken"},
			self:    "broken",
			want:    result{Owned: []string{"win-a1", "win-a2"}},
		},
		{
			name:    "a younger config with an invalid selector loses what an older one selects",
			configs: []winproxyv1alpha1.WindowsProxyConfig{broken(time.Minute), config("old", time.Hour, pool("a"))},
			holders: map[string]string{"win-a1": "broken", "win-b": "broken"},
			self:    "broken",
			want:    result{Owned: []string{"win-b"}, Conflicts: []Conflict{{Node: "win-a1", Owner: "old"}}},
		},
		{
			name:       "an older config the controller cannot read keeps the nodes it holds and claims no other",
			configs:    []winproxyv1alpha1.WindowsProxyConfig{config("ok", time.Hour)},
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
	c := config("broken", age)
	c.Spec.NodeSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pool", Operator: "Bogus"}}}
	return c
}

func TestOwnerIgnoresLinux(t *testing.T) {
	n := testbuild.Node("l", testbuild.OS("linux"))
	if o := Owner(n, Claimants([]winproxyv1alpha1.WindowsProxyConfig{config("all", time.Hour)}, nil, nil)); o != "" {
		t.Errorf("Owner() = %q, want none for a Linux node", o)
	}
}
