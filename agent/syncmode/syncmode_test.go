package syncmode

import (
	"testing"
	"time"
)

const period = 30 * time.Second

// fresh is a sync whose applier holds a list, listed a period and a half ago and not checked
// since: the ID check is due.
func fresh() Facts {
	return Facts{Period: period, SinceCheck: period + period/2, SinceList: period + period/2, CanRecall: true}
}

// computed is a sync whose engine ran on the model's view after the IDs matched, with a small
// change and nothing pending: the cheapest sync.
func computed() Facts {
	f := fresh()
	f.Checked, f.IDsMatch, f.Computed, f.Programmable, f.Settled, f.Changed = true, true, true, true, true, 1
	return f
}

// TestDecide is every row of the decision, in the order Decide weighs them.
func TestDecide(t *testing.T) {
	cases := []struct {
		name string
		// facts is what the sync knows; want the step Decide takes and why.
		facts func(*Facts)
		want  Decision
	}{
		// Where the view comes from.
		{"a new process has nothing to recall", func(f *Facts) { *f = Facts{Period: period} }, Decision{List, NothingToRecall}},
		{"a failed write left nothing to recall", func(f *Facts) { f.CanRecall = false }, Decision{List, NothingToRecall}},
		{"the network changed under the model", func(f *Facts) { f.ViewFailed = true }, Decision{List, NetworkChanged}},
		{"checked or listed this period: compute from the model, network and all", func(f *Facts) { f.SinceCheck = period / 2 }, Decision{ComputeRecalled, CheckedThisPeriod}},
		{"checked this period, but the Nodes changed: read the network again", func(f *Facts) { f.SinceCheck, f.NodesChanged = period/2, true }, Decision{Compute, NodesChanged}},
		{"the Nodes changed and the check is due: the check reads the network", func(f *Facts) { f.NodesChanged = true }, Decision{CheckIDs, IDCheckDue}},
		{"checked nine tenths of a period ago is not this period", func(f *Facts) { f.SinceCheck = period * 9 / 10 }, Decision{CheckIDs, IDCheckDue}},
		{"ten periods since the last list", func(f *Facts) { f.SinceList = FullListEvery * period }, Decision{List, FullListDue}},
		{"a fresh ID check wins over the full list", func(f *Facts) { f.SinceList, f.SinceCheck = FullListEvery*period, period/2 }, Decision{ComputeRecalled, CheckedThisPeriod}},
		{"no check this period yet", func(*Facts) {}, Decision{CheckIDs, IDCheckDue}},
		{"the ID enumeration failed", func(f *Facts) { f.Checked, f.CheckFailed = true, true }, Decision{List, IDCheckFailed}},
		{"objects came or went", func(f *Facts) { f.Checked = true }, Decision{List, IDsDiffer}},
		{"the IDs match", func(f *Facts) { f.Checked, f.IDsMatch = true, true }, Decision{Compute, IDsMatch}},
		{"a route is missing in the network as last read: read it again", func(f *Facts) { *f = computed(); f.RouteMissing = true }, Decision{Compute, RouteMissing}},
		{"a route is missing in the network just read: program all the same", func(f *Facts) { *f = computed(); f.RouteMissing, f.NetworkRead = true, true }, Decision{Changes, IDsMatch}},
		// What is programmed, once the engine ran on the model's view.
		{"only what changed", func(f *Facts) { *f = computed() }, Decision{Changes, IDsMatch}},
		{"only what changed, checked earlier this period", func(f *Facts) { *f = computed(); f.Checked, f.SinceCheck = false, period/3 }, Decision{Changes, CheckedThisPeriod}},
		{"nothing changed: no write, but the same cheap path", func(f *Facts) { *f = computed(); f.Changed = 0 }, Decision{Changes, IDsMatch}},
		{"a local pod's endpoint is not in the model", func(f *Facts) { *f = computed(); f.LocalEndpointMissing = true }, Decision{List, LocalEndpointMissing}},
		{"the recall failed", func(f *Facts) { *f = computed(); f.ChangesRefused, f.RecallFailed = true, true }, Decision{List, RecallFailed}},
		{"a write met what the model did not know", func(f *Facts) { *f = computed(); f.ChangesRefused = true }, Decision{Recall, ChangesRefused}},
		{"nothing programmable", func(f *Facts) { *f = computed(); f.Programmable = false }, Decision{Recall, NotProgrammable}},
		{"the last sync left failures", func(f *Facts) { *f = computed(); f.Settled = false }, Decision{Recall, LastSyncUnsettled}},
		{"retries wait", func(f *Facts) { *f = computed(); f.RetriesPending = true }, Decision{Recall, RetriesPending}},
		{"the node's context changed", func(f *Facts) { *f = computed(); f.NodeContextChanged = true }, Decision{Recall, NodeContextChanged}},
		{"the largest change done one by one", func(f *Facts) { *f = computed(); f.Changed = MaxChanges }, Decision{Changes, IDsMatch}},
		{"a larger change", func(f *Facts) { *f = computed(); f.Changed = MaxChanges + 1 }, Decision{Recall, ChangeTooLarge}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := fresh()
			tc.facts(&f)
			if got := Decide(f); got != tc.want {
				t.Errorf("Decide(%+v) = %v, want %v", f, got, tc.want)
			}
		})
	}
}

// TestDecideEnds: from any facts, gathering what each non-final step asks for reaches a final
// step within a few steps, so a sync never loops.
func TestDecideEnds(t *testing.T) {
	checked := fresh()
	checked.SinceCheck = period / 2
	for _, start := range []Facts{{}, fresh(), computed(), {Period: period, CanRecall: true}, checked} {
		f := start
		for steps := 0; ; steps++ {
			d := Decide(f)
			if d.Final() {
				break
			}
			if steps == 4 {
				t.Fatalf("no final step after %d steps from %+v: %v", steps, start, d)
			}
			switch d.Step {
			case CheckIDs:
				f.Checked, f.IDsMatch = true, true
			case Compute:
				f.Computed, f.Programmable, f.Settled, f.NetworkRead = true, true, true, true
			case ComputeRecalled:
				// The worst case: the route is missing, and a read of the network follows.
				f.Computed, f.Programmable, f.Settled, f.RouteMissing = true, true, true, true
			}
		}
	}
}
