package reconciletest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers"
)

// Conditions of a config's status, in type order, as configStatus lists them.
const (
	accepted     = "Accepted=True/Valid"
	noConflict   = "Conflicted=False/AsExpected"
	notDegraded  = "Degraded=False/AsExpected"
	notDowngrade = "DualStackDowngraded=False/AsExpected"
	notRolledBck = "RolledBack=False/AsExpected"
	notStalled   = "Stalled=False/AsExpected"
)

// TestConfigReconcile is the config reconciler's decisions: given the objects in the cluster,
// one Reconcile of config name makes these writes and records these events; a second Reconcile
// of the same objects (the cluster as the first left it, at the same time) makes again.
func TestConfigReconcile(t *testing.T) {
	win1, win2, win3 := node("win-1", 1, nil), node("win-2", 2, nil), node("win-3", 3, nil)
	poolA := node("win-a", 4, map[string]string{"pool": "a"})

	// c is a config whose spec moved from sync period 30 (generation 1, the last good one) to 60.
	c1 := config("c", 1, 0)
	c2 := config("c", 2, 0, syncPeriod(60), lastGood(1, &c1.Spec))
	cRollback := config("c", 2, 0, syncPeriod(60), lastGood(1, &c1.Spec), autoRollback)
	cInvalid := config("c", 2, 0, syncPeriod(60), lastGood(1, &c1.Spec), func(c *winproxyv1alpha1.WindowsProxyConfig) {
		c.Spec.NodeSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pool", Operator: "Near"}}}
	})
	// older selects the pool-a nodes and was created first; newer selects every Windows node.
	older := config("older", 1, -time.Hour, selecting(map[string]string{"pool": "a"}))
	newer := config("newer", 1, 0, syncPeriod(45))
	newerPoolB := config("newer", 2, 0, syncPeriod(45), selecting(map[string]string{"pool": "b"}))

	cases := map[string]struct {
		objects   []client.Object
		reconcile string
		// want are the writes of the first Reconcile, in kind and name order, events the events
		// it records, requeue its RequeueAfter.
		want    []write
		events  []string
		requeue time.Duration
		// again are the writes of a second Reconcile; none when a reconcile settled everything.
		again []write
	}{
		"a new config gives every selected node its WindowsProxyNode at once": {
			objects:   []client.Object{win1, win2, c1, node("linux", 9, map[string]string{winproxyv1alpha1.OSLabel: "linux"})},
			reconcile: "c",
			want: []write{
				{"patch-status", "WindowsProxyConfig", "c", configStatus{
					ObservedGeneration: 1, Nodes: "selected=2 updated=2 programmed=0 degraded=0 unreachable=0",
					Conditions: []string{accepted, noConflict, notDegraded, notDowngrade, "Progressing=True/RollingOut",
						"Ready=False/NodesNotProgrammed", "Reconciling=True/RollingOut", notRolledBck, notStalled},
				}},
				{"create", "WindowsProxyNode", "win-1", nodeSpec{Config: "c", Spec: "c@1", Owners: []string{"c*"}}},
				{"create", "WindowsProxyNode", "win-2", nodeSpec{Config: "c", Spec: "c@1", Owners: []string{"c*"}}},
			},
			events:  []string{"Normal RolloutStarted c"},
			requeue: 300 * time.Second,
		},
		"a new spec goes to one node at a time (maxUnavailable 1)": {
			objects:   []client.Object{win1, win2, win3, c2, wpn(win1, c2, &c1.Spec), wpn(win2, c2, &c1.Spec), wpn(win3, c2, &c1.Spec)},
			reconcile: "c",
			want: []write{
				{"patch-status", "WindowsProxyConfig", "c", configStatus{
					ObservedGeneration: 2, Nodes: "selected=3 updated=1 programmed=0 degraded=0 unreachable=0", LastGood: 1,
					Conditions: []string{accepted, noConflict, notDegraded, notDowngrade, "Progressing=True/RollingOut",
						"Ready=False/NodesNotProgrammed", "Reconciling=True/RollingOut", notRolledBck, notStalled},
				}},
				{"patch", "WindowsProxyNode", "win-1", nodeSpec{Config: "c", Spec: "c@2", Owners: []string{"c*"}}},
			},
			events:  []string{"Normal RolloutStarted c"},
			requeue: 300 * time.Second,
		},
		"the next node waits until the node in flight programs the spec": {
			objects: []client.Object{win1, win2, c2,
				wpn(win1, c2, &c2.Spec, unreported, updated(-time.Minute)), wpn(win2, c2, &c1.Spec)},
			reconcile: "c",
			want: []write{{"patch-status", "WindowsProxyConfig", "c", configStatus{
				ObservedGeneration: 2, Nodes: "selected=2 updated=1 programmed=0 degraded=0 unreachable=0", LastGood: 1,
				Conditions: []string{accepted, noConflict, notDegraded, notDowngrade, "Progressing=True/RollingOut",
					"Ready=False/NodesNotProgrammed", "Reconciling=True/RollingOut", notRolledBck, notStalled},
			}}},
			events: []string{"Normal RolloutStarted c"},
			// The rest of win-1's progress deadline.
			requeue: 240 * time.Second,
		},
		"a config at rest writes nothing but the first status": {
			objects:   []client.Object{win1, c1, wpn(win1, c1, &c1.Spec)},
			reconcile: "c",
			want: []write{{"patch-status", "WindowsProxyConfig", "c", configStatus{
				ObservedGeneration: 1, Nodes: "selected=1 updated=1 programmed=1 degraded=0 unreachable=0", LastGood: 1,
				Conditions: []string{accepted, noConflict, notDegraded, notDowngrade, "Progressing=False/RolloutComplete",
					"Ready=True/AllNodesProgrammed", "Reconciling=False/AllNodesProgrammed", notRolledBck, notStalled},
			}}},
		},
		"a WindowsProxyNode edited by hand gets its spec back": {
			objects:   []client.Object{win1, c1, wpn(win1, c1, &c1.Spec, handEdited)},
			reconcile: "c",
			want: []write{
				{"patch-status", "WindowsProxyConfig", "c", configStatus{
					ObservedGeneration: 1, Nodes: "selected=1 updated=1 programmed=0 degraded=0 unreachable=0",
					Conditions: []string{accepted, noConflict, notDegraded, notDowngrade, "Progressing=True/RollingOut",
						"Ready=False/NodesNotProgrammed", "Reconciling=True/RollingOut", notRolledBck, notStalled},
				}},
				{"patch", "WindowsProxyNode", "win-1", nodeSpec{Config: "c", Spec: "c@1", Owners: []string{"c*"}}},
			},
			events:  []string{"Normal RolloutStarted c"},
			requeue: 300 * time.Second,
			// The node programmed this hash before the edit: the rollout is complete, and the node
			// not programmed until its agent reports on the restored spec.
			again: []write{{"patch-status", "WindowsProxyConfig", "c", configStatus{
				ObservedGeneration: 1, Nodes: "selected=1 updated=1 programmed=0 degraded=0 unreachable=0",
				Conditions: []string{accepted, noConflict, notDegraded, notDowngrade, "Progressing=False/RolloutComplete",
					"Ready=False/NodesNotProgrammed", "Reconciling=True/NodesNotProgrammed", notRolledBck, notStalled},
			}}},
		},
		"a node an older config no longer selects is taken over; one it still owns gets a standby owner": {
			// older held win-1 and win-a, but selects only pool a now: newer takes win-1 over, and
			// stands by for win-a, which older keeps.
			objects: []client.Object{win1, poolA, older, newer,
				wpn(win1, older, &older.Spec), wpn(poolA, older, &older.Spec)},
			reconcile: "newer",
			want: []write{
				{"patch-status", "WindowsProxyConfig", "newer", configStatus{
					ObservedGeneration: 1, Nodes: "selected=1 updated=1 programmed=0 degraded=0 unreachable=0",
					Conditions: []string{accepted, "Conflicted=True/NodesClaimedByOlderConfig", notDegraded, notDowngrade, "Progressing=True/RollingOut",
						"Ready=False/NodesNotProgrammed", "Reconciling=True/RollingOut", notRolledBck, notStalled},
				}},
				{"patch", "WindowsProxyNode", "win-1", nodeSpec{Config: "newer", Spec: "newer@1", Owners: []string{"newer*"}}},
				{"patch", "WindowsProxyNode", "win-a", nodeSpec{Config: "older", Spec: "older@1", Owners: []string{"older*", "newer"}, UpdatedAt: -time.Hour}},
			},
			events:  []string{"Normal RolloutStarted newer", "Warning Conflict newer"},
			requeue: 300 * time.Second,
		},
		"the config that lost a node leaves it to the config that took it over": {
			objects: []client.Object{win1, poolA, older, newer,
				wpn(win1, older, &older.Spec), wpn(poolA, older, &older.Spec)},
			reconcile: "older",
			want: []write{{"patch-status", "WindowsProxyConfig", "older", configStatus{
				ObservedGeneration: 1, Nodes: "selected=1 updated=1 programmed=1 degraded=0 unreachable=0", LastGood: 1,
				Conditions: []string{accepted, noConflict, notDegraded, notDowngrade, "Progressing=False/RolloutComplete",
					"Ready=True/AllNodesProgrammed", "Reconciling=False/AllNodesProgrammed", notRolledBck, notStalled},
			}}},
		},
		"a config that claims a node no more stops standing by for it": {
			objects:   []client.Object{poolA, older, newerPoolB, wpn(poolA, older, &older.Spec, standby(newerPoolB))},
			reconcile: "newer",
			want: []write{
				{"patch-status", "WindowsProxyConfig", "newer", configStatus{
					ObservedGeneration: 2, Nodes: "selected=0 updated=0 programmed=0 degraded=0 unreachable=0",
					Conditions: []string{"Accepted=True/NoNodesSelected", noConflict, notDegraded, notDowngrade, "Progressing=False/RolloutComplete",
						"Ready=True/NoNodesSelected", "Reconciling=False/NoNodesSelected", notRolledBck, notStalled},
				}},
				{"patch", "WindowsProxyNode", "win-a", nodeSpec{Config: "older", Spec: "older@1", Owners: []string{"older*"}, UpdatedAt: -time.Hour}},
			},
		},
		"a deleted config's WindowsProxyNodes: deleted when no config claims the node, left to the one that does": {
			objects: []client.Object{win1, poolA, older,
				wpn(win1, config("gone", 1, 0), &c1.Spec), wpn(poolA, config("gone", 1, 0), &c1.Spec)},
			reconcile: "gone",
			want:      []write{{"delete", "WindowsProxyNode", "win-1", nil}},
		},
		"an invalid selector changes no node": {
			objects:   []client.Object{win1, win2, cInvalid, wpn(win1, cInvalid, &c1.Spec), wpn(win2, cInvalid, &c1.Spec)},
			reconcile: "c",
			want: []write{{"patch-status", "WindowsProxyConfig", "c", configStatus{
				ObservedGeneration: 2, Nodes: "selected=2 updated=0 programmed=0 degraded=0 unreachable=0", LastGood: 1,
				Conditions: []string{"Accepted=False/InvalidNodeSelector", noConflict, notDegraded, notDowngrade, "Progressing=False/InvalidNodeSelector",
					"Ready=False/InvalidNodeSelector", "Reconciling=False/InvalidNodeSelector", notRolledBck, "Stalled=True/InvalidNodeSelector"},
			}}},
			events: []string{"Warning InvalidNodeSelector c"},
		},
		"nodes that fail a new spec start a rollback, which the next reconcile carries out": {
			objects: []client.Object{win1, win2, cRollback,
				wpn(win1, cRollback, &cRollback.Spec, report(metav1.ConditionFalse, winproxyv1alpha1.ReasonSyncFailed)),
				wpn(win2, cRollback, &c1.Spec)},
			reconcile: "c",
			// The decision alone: no node moves in the reconcile that takes it. From then on the
			// rollout's target is the last good spec, which win-2 runs.
			want: []write{{"patch-status", "WindowsProxyConfig", "c", configStatus{
				ObservedGeneration: 2, Nodes: "selected=2 updated=1 programmed=1 degraded=1 unreachable=0", LastGood: 1,
				Conditions: []string{accepted, noConflict, "Degraded=True/NodesDegraded", notDowngrade, "Progressing=True/RollingBack",
					"Ready=False/RolledBack", "Reconciling=False/RolledBack", "RolledBack=True/RollingBack", "Stalled=True/RolledBack"},
				Failing:  []string{"win-1/NodeDegraded"},
				Rollback: "generation 2: win-1/NodeDegraded",
			}}},
			events:  []string{"Warning NodeDegraded c/win-1", "Warning RolledBack c"},
			requeue: time.Millisecond,
			// win-1 goes back to the last good spec; it counts as degraded until its agent
			// reports on it.
			again: []write{
				{"patch-status", "WindowsProxyConfig", "c", configStatus{
					ObservedGeneration: 2, Nodes: "selected=2 updated=2 programmed=1 degraded=1 unreachable=0", LastGood: 1,
					Conditions: []string{accepted, noConflict, "Degraded=True/NodesDegraded", notDowngrade, "Progressing=True/RollingBack",
						"Ready=False/RolledBack", "Reconciling=False/RolledBack", "RolledBack=True/RollingBack", "Stalled=True/RolledBack"},
					Failing:  []string{"win-1/NodeDegraded"},
					Rollback: "generation 2: win-1/NodeDegraded",
				}},
				{"patch", "WindowsProxyNode", "win-1", nodeSpec{Config: "c", Spec: "c@1", Owners: []string{"c*"}}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cl := newCluster(t, tc.objects...)
			rec := &recorder{}
			r := controllers.NewWindowsProxyConfigReconciler(cl, rec, controllers.WithClock(clocktesting.NewFakePassiveClock(t0)))
			req := ctrl.Request{NamespacedName: client.ObjectKey{Name: tc.reconcile}}
			res, err := r.Reconcile(context.Background(), req)
			if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			if diff := cmp.Diff(tc.want, cl.takeWrites(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("writes (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.events, rec.take(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("events (-want,+got):\n%s", diff)
			}
			if res.RequeueAfter != tc.requeue {
				t.Errorf("RequeueAfter = %v, want %v", res.RequeueAfter, tc.requeue)
			}
			if _, err := r.Reconcile(context.Background(), req); err != nil {
				t.Fatalf("second Reconcile: %v", err)
			}
			if diff := cmp.Diff(tc.again, cl.takeWrites(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("writes of a second Reconcile (-want,+got):\n%s", diff)
			}
		})
	}
}

// gauge is the value of the controller's gauge name for config, as /metrics exports it.
func gauge(t *testing.T, name, config string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "config" && l.GetValue() == config {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{config=%q}", name, config)
	return 0
}

// TestConfigMetrics: the gauges of a config follow its conditions.
func TestConfigMetrics(t *testing.T) {
	win1, win2 := node("win-1", 1, nil), node("win-2", 2, nil)
	good := config("good", 1, 0)
	bad := config("bad", 2, 0, syncPeriod(60), lastGood(1, &good.Spec), autoRollback)
	cl := newCluster(t, win1, win2, good, bad,
		wpn(win1, bad, &bad.Spec, report(metav1.ConditionFalse, winproxyv1alpha1.ReasonSyncFailed)), wpn(win2, bad, &good.Spec))
	r := controllers.NewWindowsProxyConfigReconciler(cl, &recorder{}, controllers.WithClock(clocktesting.NewFakePassiveClock(t0)))
	for _, name := range []string{"good", "bad"} {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []struct {
		name, config string
		want         float64
	}{
		// good owns no node (bad, as old as it, is first by name), so its rollout is done.
		{"winproxy_rollout_in_progress", "good", 0},
		{"winproxy_config_rolled_back", "good", 0},
		{"winproxy_rollout_in_progress", "bad", 1},
		{"winproxy_config_rolled_back", "bad", 1},
		{"winproxy_rollout_stalled", "bad", 0},
	} {
		if got := gauge(t, m.name, m.config); got != m.want {
			t.Errorf("%s{config=%q} = %v, want %v", m.name, m.config, got, m.want)
		}
	}
}
