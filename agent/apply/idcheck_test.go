package apply

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
)

// TestIDCheckComparesSets: the ID check (Verify) compares HNS's answers with
// the model as sets of IDs, in whatever order, case and braces HNS spells
// them; an ID listed twice in place of another, one missing or one more is
// a mismatch.
func TestIDCheckComparesSets(t *testing.T) {
	h := newHost(t, sim.WS2022, true, false)
	workload(h)
	h.sync()
	ctx := context.Background()
	network, _, _, _ := h.app.model.recall()
	listed := func(l hns.IDList, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return slices.Collect(l.All())
	}
	eps := listed(h.sim.ListEndpointIDs(ctx, network.ID))
	lbs := listed(h.sim.ListLoadBalancerIDs(ctx))
	if len(eps) < 2 || len(lbs) < 2 {
		t.Fatalf("the workload lists %d endpoints and %d load balancers, want 2 of each at least", len(eps), len(lbs))
	}
	edit := func(ids []string, f func([]string) []string) []string { return f(slices.Clone(ids)) }
	reversed := func(ids []string) []string { slices.Reverse(ids); return ids }
	respelt := func(ids []string) []string {
		for i, id := range ids {
			ids[i] = "{" + strings.ToLower(id) + "}"
		}
		return ids
	}
	for _, c := range []struct {
		name     string
		eps, lbs []string
		want     bool
	}{
		{"as listed", eps, lbs, true},
		{"in another order", edit(eps, reversed), edit(lbs, reversed), true},
		{"lower case, in braces", edit(eps, respelt), edit(lbs, respelt), true},
		{"a load balancer twice, another missing", eps, edit(lbs, func(ids []string) []string { ids[1] = ids[0]; return ids }), false},
		{"an endpoint missing", eps[1:], lbs, false},
		{"a load balancer more", eps, append(slices.Clone(lbs), "00000000-0000-4000-8000-0000000000FF"), false},
		{"no load balancers", eps, nil, false},
	} {
		answer := func(ids []string) hns.IDList {
			text, err := json.Marshal(ids)
			if err != nil {
				t.Fatal(err)
			}
			l, err := hns.ParseIDList(string(text))
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			return l
		}
		if got := h.app.model.matches(answer(c.eps), answer(c.lbs)); got != c.want {
			t.Errorf("%s: matches = %v, want %v", c.name, got, c.want)
		}
	}
}
