package hnstest

import "testing"

// TestEveryClaimIsChecked keeps the claims and the cases in step: a claim no case checks is
// an unverified promise, a case without a claim cannot say what a failure on real HNS means.
func TestEveryClaimIsChecked(t *testing.T) {
	checked := map[string]bool{}
	for _, g := range groups() {
		for _, c := range g.cases {
			checked[c.claim] = true
		}
	}
	known := map[string]bool{}
	for _, c := range claims {
		if known[c.ID] {
			t.Errorf("claim %s listed twice", c.ID)
		}
		known[c.ID] = true
		if !checked[c.ID] {
			t.Errorf("no case checks claim %s", c.ID)
		}
		if c.Says == "" || c.Source == "" {
			t.Errorf("claim %s needs both what it says and its source", c.ID)
		}
	}
	for id := range checked {
		if !known[id] {
			t.Errorf("a case checks the unknown claim %s", id)
		}
	}
}
