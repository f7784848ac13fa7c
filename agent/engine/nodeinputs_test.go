package engine

import (
	"reflect"
	"testing"

	"github.com/winproxy/winproxy/api/v1alpha1"
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

	var paths []string
	eachField(reflect.ValueOf(&a).Elem(), "", func(path string, _ func()) { paths = append(paths, path) })
	for i, path := range paths {
		changed, n := full(), 0
		eachField(reflect.ValueOf(&changed).Elem(), "", func(_ string, change func()) {
			if n == i {
				change()
			}
			n++
		})
		if orig := full(); sameConfig(&orig, &changed) {
			t.Errorf("%s changed, and sameConfig says the configs are the same", path)
		}
	}
	if len(paths) < 16 {
		t.Errorf("walked %d fields: %v", len(paths), paths)
	}
}

// eachField calls f for each field under v, down to the fields of structs, with a change to it:
// another value, or no value for a pointer.
func eachField(v reflect.Value, path string, f func(path string, change func())) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			eachField(v.Field(i), path+"."+v.Type().Field(i).Name, f)
		}
	case reflect.Pointer:
		eachField(v.Elem(), path, f)
		f(path+" (unset)", func() { v.SetZero() })
	case reflect.Bool:
		f(path, func() { v.SetBool(!v.Bool()) })
	case reflect.String:
		f(path, func() { v.SetString(v.String() + "x") })
	case reflect.Int32, reflect.Int64, reflect.Int:
		f(path, func() { v.SetInt(v.Int() + 1) })
	case reflect.Slice:
		f(path, func() { v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem()))) })
	case reflect.Map:
		f(path, func() { v.SetMapIndex(reflect.ValueOf("added"), reflect.Zero(v.Type().Elem())) })
	default:
		panic(path + ": a field of kind " + v.Kind().String() + ", which eachField does not change yet")
	}
}
