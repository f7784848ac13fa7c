package nodestatus

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/winproxy/winproxy/agent/apply"
	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/healthcheck"
	"github.com/winproxy/winproxy/agent/ownership"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/fieldwalk"
)

// failedReport is a sync with every field of Sync set, errors and lists included.
func failedReport() Sync {
	s := programmedReport(time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC))
	s.HNSErr = errors.New("HNS is not running")
	s.Problems = []engine.Problem{{Service: "default/web", Reason: "NoFrontend", Message: "no cluster IP"}}
	s.Result.Skipped = "network missing"
	s.Result.Failures = []apply.Failure{{Object: "lb 10.0.0.10:80/TCP", Err: errors.New("refused"), Deferred: true}}
	s.Result.Writes = map[apply.Write]int{apply.WriteLBCreate: 1}
	s.Result.Adopted = 1
	s.Result.Ledger = ownership.LedgerStatus{Path: "/var/lib/winproxy/ledger", Unsaved: 2,
		WriteErr: errors.New("no space left on device"), SpaceErr: errors.New("no space left on device")}
	s.Health = &Health{ProxyAddr: "0.0.0.0:10256", ProxyErr: errors.New("address in use"), Services: 3,
		Failures: []healthcheck.Failure{{Service: "default/web", Port: 30001, Err: errors.New("address in use")}}}
	return s
}

// TestSameInputsSeesEveryField changes each field of a sync in turn, down to the fields of its
// structs and of a list's first element, and expects SameInputs to answer as reflect.DeepEqual of
// the two syncs' Inputs does: a field added to Sync, apply.Result or what they hold, and neither
// compared nor dropped by Inputs, would let the agent skip writing a status that changed.
func TestSameInputsSeesEveryField(t *testing.T) {
	if a, b := failedReport(), failedReport(); !SameInputs(a, b) {
		t.Fatal("two syncs alike, their errors distinct values of the same text, compare different")
	}
	dropped := 0
	n := fieldwalk.Changes(failedReport, "Sync", func(path string, changed Sync) {
		orig := failedReport()
		want := reflect.DeepEqual(Inputs(orig), Inputs(changed))
		if want {
			dropped++
		}
		if got := SameInputs(orig, changed); got != want {
			t.Errorf("%s changed: SameInputs says %t, reflect.DeepEqual of the Inputs %t", path, got, want)
		}
	})
	if n < 60 || dropped < 8 {
		t.Errorf("walked %d fields, %d of them dropped by Inputs", n, dropped)
	}
}

// TestSameInputsEmptyLists expects nil and empty lists to compare the same: both build the same
// status, so a sync that found none either way writes nothing.
func TestSameInputsEmptyLists(t *testing.T) {
	a, b := programmedReport(time.Time{}), programmedReport(time.Time{})
	a.Effective.IPFamilies, a.Problems, a.Result.Failures = nil, nil, nil
	b.Effective.IPFamilies, b.Problems, b.Result.Failures = []v1alpha1.IPFamily{}, []engine.Problem{}, []apply.Failure{}
	if !SameInputs(a, b) {
		t.Error("nil and empty lists compare different")
	}
}

// BenchmarkSameInputs compares the Inputs of two quiet syncs alike, the agent's question after
// every EndpointSlice event that moved an endpoint.
func BenchmarkSameInputs(b *testing.B) {
	t0 := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	last, now := Inputs(programmedReport(t0)), Inputs(programmedReport(t0.Add(time.Second)))
	b.ReportAllocs()
	for b.Loop() {
		if !SameInputs(last, now) {
			b.Fatal("two quiet syncs compare different")
		}
	}
}
