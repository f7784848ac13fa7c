package rollout

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var now = time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)

// on is a node on hash cur that wants hash "new".
func on(name, cur string, programmed bool) Node {
	return Node{Name: name, Desired: "new", Current: cur, Programmed: programmed, UpdatedAt: now.Add(-time.Minute)}
}

// foreign is a node whose WindowsProxyNode another config wrote, with hash cur.
func foreign(name, cur string, programmed bool) Node {
	n := on(name, cur, programmed)
	n.Foreign = true
	return n
}

// lapsed is a node that programmed "new" a month ago and no longer reports Programmed.
func lapsed(name string, degraded bool) Node {
	return Node{Name: name, Desired: "new", Current: "new", ProgrammedOnce: true, Degraded: degraded, UpdatedAt: now.Add(-30 * 24 * time.Hour)}
}

func TestCompute(t *testing.T) {
	opts := Options{MaxUnavailable: 1, ProgressDeadline: 5 * time.Minute, Now: now}
	tests := []struct {
		name  string
		nodes []Node
		opts  func(*Options)
		want  Plan
	}{
		{
			name:  "new nodes get their config at once, whatever the budget",
			nodes: []Node{{Name: "c", Desired: "new"}, {Name: "a", Desired: "new"}, {Name: "b", Desired: "new"}},
			want:  Plan{Create: []string{"a", "b", "c"}, InFlight: 3, RequeueAfter: 5 * time.Minute},
		},
		{
			name:  "one at a time, in name order",
			nodes: []Node{on("c", "old", true), on("b", "old", true), on("a", "old", true)},
			want:  Plan{Update: []string{"a"}, Pending: []string{"b", "c"}, InFlight: 1, RequeueAfter: 5 * time.Minute},
		},
		{
			name:  "the next batch waits for the previous one to program",
			nodes: []Node{on("a", "new", false), on("b", "old", true), on("c", "old", true)},
			want:  Plan{Pending: []string{"b", "c"}, InFlight: 1, RequeueAfter: 4 * time.Minute},
		},
		{
			name:  "the next batch starts once the previous one programmed",
			nodes: []Node{on("a", "new", true), on("b", "old", true), on("c", "old", true)},
			want:  Plan{Update: []string{"b"}, Pending: []string{"c"}, InFlight: 1, RequeueAfter: 5 * time.Minute},
		},
		{
			name:  "a budget of two",
			nodes: []Node{on("a", "new", false), on("b", "old", true), on("c", "old", true), on("d", "old", true)},
			opts:  func(o *Options) { o.MaxUnavailable = 2 },
			want:  Plan{Update: []string{"b"}, Pending: []string{"c", "d"}, InFlight: 2, RequeueAfter: 4 * time.Minute},
		},
		{
			name:  "unavailable nodes are updated at once and use up the budget",
			nodes: []Node{on("a", "old", true), on("b", "old", false), on("c", "mid", false)},
			want:  Plan{Update: []string{"b", "c"}, Pending: []string{"a"}, InFlight: 2, RequeueAfter: 5 * time.Minute},
		},
		{
			name:  "complete",
			nodes: []Node{on("a", "new", true), on("b", "new", true)},
			want:  Plan{},
		},
		{
			name:  "a node reporting Degraded for the new config stalls the rollout",
			nodes: []Node{{Name: "a", Desired: "new", Current: "new", Degraded: true, UpdatedAt: now}, on("b", "old", true), {Name: "z", Desired: "new"}},
			opts:  func(o *Options) { o.MaxUnavailable = 10 },
			want:  Plan{Create: []string{"z"}, Pending: []string{"b"}, InFlight: 2, Stalls: []Stall{{Node: "a"}}},
		},
		{
			name:  "a node past the progress deadline stalls the rollout",
			nodes: []Node{{Name: "a", Desired: "new", Current: "new", UpdatedAt: now.Add(-5 * time.Minute)}, on("b", "old", true)},
			opts:  func(o *Options) { o.MaxUnavailable = 10 },
			want:  Plan{Pending: []string{"b"}, InFlight: 1, Stalls: []Stall{{Node: "a", DeadlineExceeded: true}}},
		},
		{
			name:  "paused: nothing moves, new nodes still get a config",
			nodes: []Node{on("a", "old", true), on("b", "old", false), {Name: "c", Desired: "new"}},
			opts:  func(o *Options) { o.Paused = true },
			want:  Plan{Create: []string{"c"}, Pending: []string{"a", "b"}, InFlight: 1},
		},
		{
			name:  "nodes that failed resolution are left out",
			nodes: []Node{{Name: "a", Current: "old", Programmed: true}, {Name: "c"}, on("b", "old", true)},
			want:  Plan{Update: []string{"b"}, InFlight: 1, RequeueAfter: 5 * time.Minute},
		},
		{
			name:  "a node that failed resolution and is down on its old config uses the budget",
			nodes: []Node{{Name: "a", Current: "old"}, on("b", "old", true)},
			want:  Plan{Pending: []string{"b"}},
		},
		{
			name:  "taking over nodes another config holds is paced like an update",
			nodes: []Node{foreign("a", "theirs", true), foreign("b", "theirs", true), foreign("c", "new", true)},
			want:  Plan{Update: []string{"a"}, Pending: []string{"b", "c"}, InFlight: 1, RequeueAfter: 5 * time.Minute},
		},
		{
			name:  "a held node that is down is taken over at once",
			nodes: []Node{foreign("a", "theirs", true), foreign("b", "theirs", false)},
			want:  Plan{Update: []string{"b"}, Pending: []string{"a"}, InFlight: 1, RequeueAfter: 5 * time.Minute},
		},
		{
			name: "a spec edited by hand under the current hash is restored, paced like an update",
			nodes: []Node{
				func() Node { n := on("a", "new", true); n.Drifted = true; return n }(),
				func() Node { n := on("b", "new", true); n.Drifted = true; return n }(),
			},
			want: Plan{Update: []string{"a"}, Pending: []string{"b"}, InFlight: 1, RequeueAfter: 5 * time.Minute},
		},
		{
			name:  "a node that lapsed long after programming its config is unavailable, not a stall",
			nodes: []Node{lapsed("a", false), on("b", "new", true)},
			want:  Plan{},
		},
		{
			name:  "a node that lapsed with Degraded is not a stall either",
			nodes: []Node{lapsed("a", true), on("b", "new", true)},
			want:  Plan{},
		},
		{
			name:  "a lapsed node uses the budget",
			nodes: []Node{lapsed("a", false), on("b", "old", true)},
			want:  Plan{Pending: []string{"b"}},
		},
		{
			name:  "degraded on the old config is not a stall",
			nodes: []Node{{Name: "a", Desired: "new", Current: "old", Degraded: true}, on("b", "old", true)},
			want:  Plan{Update: []string{"a"}, Pending: []string{"b"}, InFlight: 1, RequeueAfter: 5 * time.Minute},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts
			if tt.opts != nil {
				tt.opts(&o)
			}
			got := Compute(tt.nodes, o)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Compute() (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestComputeNeverExceedsBudget drives a fleet through a whole rollout, programming every update
// in the next step, and checks that no step has more than MaxUnavailable nodes in flight.
func TestComputeNeverExceedsBudget(t *testing.T) {
	for _, budget := range []int{1, 3, 10} {
		nodes := make([]Node, 10)
		for i := range nodes {
			nodes[i] = on(string(rune('a'+i)), "old", true)
		}
		steps := 0
		for ; steps < 20; steps++ {
			p := Compute(nodes, Options{MaxUnavailable: budget, ProgressDeadline: time.Minute, Now: now})
			if p.InFlight > budget {
				t.Fatalf("budget %d: step %d has %d nodes in flight", budget, steps, p.InFlight)
			}
			if p.Done() {
				break
			}
			for i := range nodes {
				if nodes[i].Current == "new" {
					nodes[i].Programmed = true
				}
				if slices.Contains(p.Update, nodes[i].Name) {
					nodes[i].Current, nodes[i].Programmed, nodes[i].UpdatedAt = "new", false, now
				}
			}
		}
		if want := 2*((10+budget-1)/budget) + 1; steps > want {
			t.Errorf("budget %d: rollout took %d steps, want at most %d", budget, steps, want)
		}
	}
}

func TestMaxUnavailable(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }
	tests := []struct {
		v        *intstr.IntOrString
		selected int
		want     int
	}{
		{nil, 10, 1},
		{num(3), 10, 3},
		{num(0), 10, 1},
		{pct("25%"), 10, 3},
		{pct("100%"), 1000, 1000},
		{pct("1%"), 10, 1},
		{pct("50%"), 0, 1},
		{pct("bogus"), 10, 1},
	}
	for _, tt := range tests {
		if got := MaxUnavailable(tt.v, tt.selected); got != tt.want {
			t.Errorf("MaxUnavailable(%v, %d) = %d, want %d", tt.v, tt.selected, got, tt.want)
		}
	}
}

func TestFailures(t *testing.T) {
	opts := Options{MaxUnavailable: 1, ProgressDeadline: 5 * time.Minute, Now: now}
	// degradedAfter is a node that programmed "new" at -10m and reports Degraded since ago.
	degradedAfter := func(name string, ago time.Duration) Node {
		return Node{Name: name, Desired: "new", Current: "new", ProgrammedOnce: true, Degraded: true,
			DegradedSince: now.Add(-ago), UpdatedAt: now.Add(-10 * time.Minute)}
	}
	tests := []struct {
		name     string
		nodes    []Node
		want     []Failure
		wantNext time.Duration
	}{
		{
			name:  "programmed nodes and nodes waiting for their turn do not fail",
			nodes: []Node{on("a", "new", true), on("b", "old", true), on("c", "old", false)},
		},
		{
			name:     "a node reporting Degraded before programming fails at the deadline, not at once",
			nodes:    []Node{{Name: "a", Desired: "new", Current: "new", Degraded: true, DegradedSince: now, UpdatedAt: now.Add(-time.Minute)}},
			wantNext: 4 * time.Minute,
		},
		{
			name: "silent, waiting and Degraded nodes past the deadline all fail, in name order",
			nodes: []Node{
				{Name: "c", Desired: "new", Current: "new", Degraded: true, UpdatedAt: now.Add(-5 * time.Minute)},
				{Name: "a", Desired: "new", Current: "new", UpdatedAt: now.Add(-6 * time.Minute)},
				{Name: "b", Desired: "new", Current: "new", UpdatedAt: now.Add(-time.Minute)},
			},
			want:     []Failure{{Node: "a"}, {Node: "c"}},
			wantNext: 4 * time.Minute,
		},
		{
			name:     "Degraded after programming counts from when it turned Degraded",
			nodes:    []Node{degradedAfter("a", 5*time.Minute), degradedAfter("b", 2*time.Minute)},
			want:     []Failure{{Node: "a", AfterProgramming: true}},
			wantNext: 3 * time.Minute,
		},
		{
			name: "Degraded since before the node got the config counts from when it got it",
			nodes: []Node{{Name: "a", Desired: "new", Current: "new", ProgrammedOnce: true, Degraded: true,
				DegradedSince: now.Add(-time.Hour), UpdatedAt: now.Add(-time.Minute)}},
			wantNext: 4 * time.Minute,
		},
		{
			name:  "a lapse without Degraded after programming is not a failure",
			nodes: []Node{lapsed("a", false)},
		},
		{
			name: "an agent silent after programming fails a deadline after it went silent, or after the config came",
			nodes: []Node{
				{Name: "a", Desired: "new", Current: "new", ProgrammedOnce: true, Silent: true, SilentSince: now.Add(-6 * time.Minute), UpdatedAt: now.Add(-10 * time.Minute)},
				{Name: "b", Desired: "new", Current: "new", ProgrammedOnce: true, Silent: true, SilentSince: now.Add(-time.Minute), UpdatedAt: now.Add(-10 * time.Minute)},
				{Name: "c", Desired: "new", Current: "new", ProgrammedOnce: true, Silent: true, SilentSince: now.Add(-time.Hour), UpdatedAt: now.Add(-2 * time.Minute)},
			},
			want:     []Failure{{Node: "a", AfterProgramming: true}},
			wantNext: 3 * time.Minute,
		},
		{
			name: "nodes on another config, another config's nodes, edited specs and unresolved nodes cannot fail",
			nodes: []Node{
				{Name: "a", Desired: "new", Current: "old", Degraded: true, UpdatedAt: now.Add(-time.Hour)},
				{Name: "b", Desired: "new", Current: "new", Foreign: true, UpdatedAt: now.Add(-time.Hour)},
				{Name: "c", Desired: "new", Current: "new", Drifted: true, UpdatedAt: now.Add(-time.Hour)},
				{Name: "d", Current: "old", UpdatedAt: now.Add(-time.Hour)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, next := Failures(tt.nodes, opts)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Failures() (-want,+got):\n%s", diff)
			}
			if next != tt.wantNext {
				t.Errorf("next failure in %v, want %v", next, tt.wantNext)
			}
		})
	}
}

// TestRollbackIsPacedLikeARollout: a rollback is a rollout towards the last good hashes. The node
// that failed is down and goes back at once; the nodes that programmed the failed config go back
// one budget at a time, each batch after the previous one programmed the old config.
func TestRollbackIsPacedLikeARollout(t *testing.T) {
	nodes := []Node{
		{Name: "a", Desired: "good", Current: "bad", Programmed: true},
		{Name: "b", Desired: "good", Current: "bad", Programmed: true},
		{Name: "c", Desired: "good", Current: "bad", Degraded: true},
		{Name: "d", Desired: "good", Current: "good", Programmed: true},
	}
	var steps [][]string
	for range 10 {
		p := Compute(nodes, Options{MaxUnavailable: 1, ProgressDeadline: time.Minute, Now: now})
		if p.Done() {
			break
		}
		if p.InFlight > 1 {
			t.Fatalf("step %d: %d nodes in flight", len(steps), p.InFlight)
		}
		steps = append(steps, p.Update)
		for i := range nodes {
			if nodes[i].Current == "good" {
				nodes[i].Programmed, nodes[i].Degraded = true, false
			}
			if slices.Contains(p.Update, nodes[i].Name) {
				nodes[i].Current, nodes[i].Programmed, nodes[i].UpdatedAt = "good", false, now
			}
		}
	}
	// A nil step waits for the node moved in the step before to program the good config.
	if diff := cmp.Diff([][]string{{"c"}, nil, {"a"}, nil, {"b"}, nil}, steps, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("updates per step (-want,+got):\n%s", diff)
	}
}
