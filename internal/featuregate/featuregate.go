// Package featuregate is the versioned table of the feature gates kube-proxy accepts, and the
// rules kube-proxy applies when they are set (k8s.io/component-base/featuregate): a gate is
// evaluated at the Kubernetes minor version of the node it is meant for, because a mixed-version
// fleet accepts different gate settings on different nodes.
//
// The table (zz_generated_gates.go) is generated from Kubernetes 1.37.2. It is exact for 1.37
// nodes. For an older minor it knows every gate that still exists in 1.37, at the stage it had
// then, as far as upstream's versioned list records it: versioned gates began in 1.31, and gates
// older than that carry the history upstream backfilled (or "1.0" for "since before then"). A
// gate removed before 1.37 is unknown at every version, so a node older than its removal reports
// it as unrecognized although its kube-proxy would accept it; the node then keeps its last good
// config.
package featuregate

//go:generate go run ./gen -o zz_generated_gates.go

import (
	"fmt"
	"maps"
	"slices"
)

// Gate names the agent reads.
const (
	// WinDSR allows kube-proxy --enable-dsr on Windows.
	WinDSR = "WinDSR"
	// WinOverlay allows kube-proxy to program overlay (VXLAN) networks on Windows.
	WinOverlay = "WinOverlay"
	// AllowServiceExternalIPs makes kube-proxy honour Service externalIPs.
	AllowServiceExternalIPs = "AllowServiceExternalIPs"
	// PreferSameTrafficDistribution makes kube-proxy honour EndpointSlice hints for nodes
	// (trafficDistribution: PreferSameNode).
	PreferSameTrafficDistribution = "PreferSameTrafficDistribution"

	// allAlpha and allBeta set every alpha (beta) gate that is not set explicitly.
	allAlpha = "AllAlpha"
	allBeta  = "AllBeta"
)

// agentGates are the gates whose values Effective reports: the ones a Windows proxy reads. The
// others are only validated, so that a node's resolved config stays small.
var agentGates = []string{WinDSR, WinOverlay, AllowServiceExternalIPs, PreferSameTrafficDistribution}

// Stage is a gate's maturity at some version.
type Stage string

// Stages, as upstream names them.
const (
	Alpha      Stage = "Alpha"
	Beta       Stage = "Beta"
	GA         Stage = "GA"
	Deprecated Stage = "Deprecated"
)

// Spec is what a gate is from one minor version on.
type Spec struct {
	// Since is the first minor version (of Kubernetes 1.x) the spec applies to.
	Since int
	// Stage is the gate's maturity.
	Stage Stage
	// Default is the value the gate has when it is not set.
	Default bool
	// Locked means any value other than Default is rejected (GA gates awaiting removal).
	Locked bool
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
// --feature-gates, and returns the value of each of agentGates that exists there. Names are
// checked in sorted order and the first failure is returned, as kube-proxy stops at the first
// bad gate.
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
	out := make(map[string]bool, len(agentGates))
	for _, name := range agentGates {
		spec, ok := Lookup(name, minor)
		if !ok {
			continue
		}
		out[name] = spec.Default
		if v, set := requested[allAlpha]; set && spec.Stage == Alpha {
			out[name] = v
		}
		if v, set := requested[allBeta]; set && spec.Stage == Beta {
			out[name] = v
		}
		if v, set := requested[name]; set {
			out[name] = v
		}
	}
	return out, nil
}
