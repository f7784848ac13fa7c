package engine

import (
	"testing"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/fieldwalk"
)

// TestSameConfigSeesEveryField changes each field of a resolved config in turn, down to the
// fields of its structs, and expects sameConfig to see the change: a field added to the API type
// and not compared would let an Incremental keep a node context derived from the old config.
func TestSameConfigSeesEveryField(t *testing.T) {
	full := func() v1alpha1.ResolvedProxyConfig {
		return v1alpha1.ResolvedProxyConfig{
			Network:      v1alpha1.NetworkSpec{Name: "Calico", Type: v1alpha1.NetworkTypeOverlay},
			EnableDSR:    true,
			SourceVIP:    &v1alpha1.ResolvedSourceVIP{Strategy: v1alpha1.SourceVIPStrategyStatic, EndpointName: "sourcevip", Address: "10.244.1.5"},
			DualStack:    true,
			FeatureGates: map[string]bool{"WinDSR": true},
			HealthCheck:  v1alpha1.HealthCheckSpec{ForwardVIP: true, RootEndpointName: "root", Port: 10256},
			Sync:         v1alpha1.SyncSpec{PeriodSeconds: 30, MinPeriodSeconds: 1},
			NodeIPs:      []string{"10.0.0.4"}, PodCIDRs: []string{"10.244.1.0/24"},
			KubernetesVersion: "v1.37.2", TopologyAwareRouting: true,
		}
	}
	a, b := full(), full()
	if !sameConfig(&a, &b) {
		t.Fatal("two copies of one config compare different")
	}
	empty, none := v1alpha1.ResolvedProxyConfig{FeatureGates: map[string]bool{}, NodeIPs: []string{}}, v1alpha1.ResolvedProxyConfig{}
	if !sameConfig(&empty, &none) {
		t.Error("empty and nil lists compare different: a cache read would make a node context again")
	}

	n := fieldwalk.Changes(full, "", func(path string, changed v1alpha1.ResolvedProxyConfig) {
		if orig := full(); sameConfig(&orig, &changed) {
			t.Errorf("%s changed, and sameConfig says the configs are the same", path)
		}
	})
	if n < 16 {
		t.Errorf("walked %d fields", n)
	}
}
