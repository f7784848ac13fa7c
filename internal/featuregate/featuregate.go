// Package featuregate is the versioned table of the kube-proxy feature gates a Windows proxy
// reads, and the rules kube-proxy applies when they are set (k8s.io/component-base/featuregate):
// a gate is evaluated at the Kubernetes minor version of the node it is meant for, because a
// mixed-version fleet accepts different gate settings on different nodes.
package featuregate

import (
	"fmt"
	"maps"
	"slices"
)

// Gate names.
const (
	// WinDSR allows kube-proxy --enable-dsr on Windows.
	WinDSR = "WinDSR"
	// WinOverlay allows kube-proxy to program overlay (VXLAN) networks on Windows.
	WinOverlay = "WinOverlay"
	// AllowServiceExternalIPs makes kube-proxy honour Service externalIPs.
	AllowServiceExternalIPs = "AllowServiceExternalIPs"
)

// Spec is what a gate is from one minor version on.
type Spec struct {
	// Since is the first minor version (of Kubernetes 1.x) the spec applies to.
	Since int
	// Default is the value the gate has when it is not set.
	Default bool
	// Locked means any value other than Default is rejected (GA gates awaiting removal).
	Locked bool
}

// table holds each gate's specs in ascending Since order: alpha, beta, GA (reference §8, from kube_features.go and
// versioned_feature_list.yaml of Kubernetes 1.37.2). Below its first Since a gate does not exist.
var table = map[string][]Spec{
	WinDSR: {
		{Since: 14, Default: false},
		{Since: 33, Default: true},
		{Since: 34, Default: true, Locked: true},
	},
	WinOverlay: {
		{Since: 14, Default: false},
		{Since: 20, Default: true},
		{Since: 34, Default: true, Locked: true},
	},
	AllowServiceExternalIPs: {
		{Since: 0, Default: true},
	},
}

// Lookup returns the spec of gate at minor version minor, and false when the gate does not exist
// at that version (unknown name, or a version before the gate was added).
func Lookup(gate string, minor int) (Spec, bool) {
	specs := table[gate]
	for i := len(specs) - 1; i >= 0; i-- {
		if specs[i].Since <= minor {
			return specs[i], true
		}
	}
	return Spec{}, false
}

// UnknownError is kube-proxy's error for a gate that does not exist at its version.
type UnknownError struct{ Gate string }

func (e *UnknownError) Error() string { return "unrecognized feature gate: " + e.Gate }

// LockedError is kube-proxy's error for a locked gate set to a non-default value.
type LockedError struct {
	Gate  string
	Value bool
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("cannot set feature gate %s to %t, feature is locked to %t", e.Gate, e.Value, !e.Value)
}

// Effective applies requested to the gates that exist at minor version minor, like kube-proxy's
// --feature-gates, and returns the value of every such gate. Names are checked in sorted order and
// the first failure is returned, as kube-proxy stops at the first bad gate.
func Effective(minor int, requested map[string]bool) (map[string]bool, error) {
	for _, name := range slices.Sorted(maps.Keys(requested)) {
		spec, ok := Lookup(name, minor)
		if !ok {
			return nil, &UnknownError{Gate: name}
		}
		if spec.Locked && requested[name] != spec.Default {
			return nil, &LockedError{Gate: name, Value: requested[name]}
		}
	}
	out := make(map[string]bool, len(table))
	for name := range table {
		if spec, ok := Lookup(name, minor); ok {
			out[name] = spec.Default
			if v, set := requested[name]; set {
				out[name] = v
			}
		}
	}
	return out, nil
}
