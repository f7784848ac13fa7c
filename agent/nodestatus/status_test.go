package nodestatus

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winproxy/winproxy/agent/apply"
	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/healthcheck"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

func okStatus(reason string) engine.Status {
	return engine.Status{True: true, Reason: reason, Message: reason}
}

func programmedReport(at time.Time) Sync {
	return Sync{
		Version:      hns.Version{Major: 13, Minor: 3},
		WindowsBuild: "20348",
		Effective: engine.Effective{
			Network:                v1alpha1.NetworkStatus{Name: "Calico", ID: "n1", Type: "Overlay"},
			NetworkReady:           okStatus(v1alpha1.ReasonNetworkFound),
			Programmable:           true,
			SourceVIP:              v1alpha1.SourceVIPStatus{Address: "10.244.2.2", Origin: v1alpha1.SourceVIPOriginEndpoint},
			SourceVIPReady:         okStatus(v1alpha1.ReasonSourceVIPFound),
			DSR:                    v1alpha1.DSRStatus{Requested: true, Active: true},
			DSRActive:              okStatus(v1alpha1.ReasonDSREnabled),
			IPFamilies:             []v1alpha1.IPFamily{v1alpha1.IPv4},
			DualStackDowngraded:    okStatus(v1alpha1.ReasonOverlayNetwork),
			TopologyRoutedServices: 2,
		},
		Result:   apply.Result{LBsDesired: 9, LBsProgrammed: 9, RemoteEndpoints: 4},
		Health:   &Health{},
		Finished: at,
		Duration: 12 * time.Millisecond,
	}
}

func wpn() *v1alpha1.WindowsProxyNode {
	w := &v1alpha1.WindowsProxyNode{Spec: v1alpha1.WindowsProxyNodeSpec{ConfigName: "c", Hash: "h1"}}
	w.Generation = 3
	return w
}

func condition(t *testing.T, st v1alpha1.WindowsProxyNodeStatus, typ string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(st.Conditions, typ)
	if c == nil {
		t.Fatalf("no %s condition in %+v", typ, st.Conditions)
	}
	return *c
}

func TestBuildStatusProgrammed(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	st := Build(v1alpha1.WindowsProxyNodeStatus{}, wpn(), programmedReport(t0))
	if st.ObservedHash != "h1" || st.HNS.Version != "13.3" || st.LoadBalancers.Programmed != 9 || st.RemoteEndpoints != 4 || st.TopologyRoutedServices != 2 {
		t.Errorf("status = %+v", st)
	}
	if diff := cmp.Diff([]string{"RemoteSubnet", "DSR", "IPv6DualStack", "SessionAffinity"}, st.HNS.Capabilities); diff != "" {
		t.Errorf("capabilities (-want +got):\n%s", diff)
	}
	for typ, want := range map[string]metav1.ConditionStatus{
		v1alpha1.ConditionProgrammed: metav1.ConditionTrue, v1alpha1.ConditionDegraded: metav1.ConditionFalse,
		v1alpha1.ConditionDSRActive: metav1.ConditionTrue, v1alpha1.ConditionDualStackDowngraded: metav1.ConditionTrue,
		v1alpha1.ConditionNetworkReady: metav1.ConditionTrue, v1alpha1.ConditionSourceVIPReady: metav1.ConditionTrue,
	} {
		if c := condition(t, st, typ); c.Status != want || c.ObservedGeneration != 3 {
			t.Errorf("%s = %s (generation %d), want %s (generation 3)", typ, c.Status, c.ObservedGeneration, want)
		}
	}
	if st.LastSyncTime == nil || !st.LastSyncTime.Time.Equal(t0) || st.LastSyncDurationMilliseconds != 12 {
		t.Errorf("sync time = %v %dms", st.LastSyncTime, st.LastSyncDurationMilliseconds)
	}
}

// A quiet periodic sync must give the identical status, so the agent writes nothing.
func TestBuildStatusQuietSyncChangesNothing(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	first := Build(v1alpha1.WindowsProxyNodeStatus{}, wpn(), programmedReport(t0))
	second := Build(first, wpn(), programmedReport(t0.Add(30*time.Second)))
	if !equality.Semantic.DeepEqual(first, second) {
		t.Errorf("a quiet sync changed the status:\n%s", cmp.Diff(first, second))
	}
	// A real change stamps the new sync time.
	r := programmedReport(t0.Add(60 * time.Second))
	r.Result.LBsProgrammed, r.Result.LBsDesired = 10, 10
	third := Build(second, wpn(), r)
	if !third.LastSyncTime.Time.Equal(t0.Add(60 * time.Second)) {
		t.Errorf("changed status kept the old sync time %v", third.LastSyncTime)
	}
	if c := condition(t, third, v1alpha1.ConditionProgrammed); !c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("Programmed stayed True but its transition time moved to %v", c.LastTransitionTime)
	}
}

func TestBuildStatusFailures(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	prev := Build(v1alpha1.WindowsProxyNodeStatus{}, wpn(), programmedReport(t0))

	failed := programmedReport(t0.Add(time.Minute))
	failed.Result.LBsProgrammed, failed.Result.LBsFailed = 8, 1
	failed.Result.Failures = []apply.Failure{{Object: "IPv4/clusterip 10.0.0.100:80/TCP", Err: errors.New("boom")}}
	st := Build(prev, wpn(), failed)
	if c := condition(t, st, v1alpha1.ConditionProgrammed); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonSyncFailed {
		t.Errorf("Programmed = %+v, want False/SyncFailed", c)
	}
	if c := condition(t, st, v1alpha1.ConditionDegraded); c.Status != metav1.ConditionTrue {
		t.Errorf("Degraded = %+v, want True", c)
	}

	down := programmedReport(t0.Add(2 * time.Minute))
	down.HNSErr = hns.NewError("GetNetworkByName", "Calico", hns.CodeHNSNotRunning, nil)
	st = Build(prev, wpn(), down)
	if c := condition(t, st, v1alpha1.ConditionProgrammed); c.Reason != v1alpha1.ReasonHNSNotRunning {
		t.Errorf("Programmed = %+v, want reason HNSNotRunning", c)
	}
	if st.LoadBalancers != prev.LoadBalancers || st.SourceVIP != prev.SourceVIP {
		t.Errorf("HNS down lost what was known: %+v", st)
	}

	blocked := programmedReport(t0.Add(3 * time.Minute))
	blocked.Effective.Programmable = false
	blocked.Effective.Blocked = engine.Cause{Reason: v1alpha1.ReasonSourceVIPEndpointMissing, Message: "HNS endpoint Calico_ep not found"}
	st = Build(prev, wpn(), blocked)
	if c := condition(t, st, v1alpha1.ConditionProgrammed); c.Reason != v1alpha1.ReasonSourceVIPEndpointMissing {
		t.Errorf("Programmed = %+v, want reason SourceVIPEndpointMissing", c)
	}
}

// With the network gone nothing is programmed: no condition may claim DSR, a family or a source VIP
// in effect (issue #11: NetworkNotFound once reported DSRActive=True and both families).
func TestBuildStatusClaimsNothingWhenNothingIsProgrammed(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	prev := Build(v1alpha1.WindowsProxyNodeStatus{}, wpn(), programmedReport(t0))
	r := programmedReport(t0.Add(time.Minute))
	blocked := engine.Cause{Reason: v1alpha1.ReasonNetworkNotFound, Message: `no HNS network is named "Calico"`}
	r.Effective.NetworkReady = engine.Status{Reason: v1alpha1.ReasonNetworkNotFound, Message: blocked.Message}
	r.Effective.Programmable, r.Effective.Blocked = false, blocked
	r.Effective.IPFamilies = []v1alpha1.IPFamily{v1alpha1.IPv4, v1alpha1.IPv6}
	r.Effective.DualStackDowngraded = engine.Status{Reason: v1alpha1.ReasonDualStackActive}
	r.Effective.SourceVIPReady = okStatus(v1alpha1.ReasonNotRequired)
	st := Build(prev, wpn(), r)

	if len(st.IPFamilies) != 0 || st.DSR.Active || st.SourceVIP.Address != "" || st.TopologyRoutedServices != 0 {
		t.Errorf("families %v, DSR active %v, source VIP %q, %d services routed by topology in effect with nothing programmed",
			st.IPFamilies, st.DSR.Active, st.SourceVIP.Address, st.TopologyRoutedServices)
	}
	for _, typ := range []string{v1alpha1.ConditionDSRActive, v1alpha1.ConditionDualStackDowngraded, v1alpha1.ConditionSourceVIPReady} {
		if c := condition(t, st, typ); c.Status != metav1.ConditionUnknown || c.Reason != v1alpha1.ReasonNetworkNotFound {
			t.Errorf("%s = %s/%s, want Unknown/NetworkNotFound", typ, c.Status, c.Reason)
		}
	}
	if c := condition(t, st, v1alpha1.ConditionProgrammed); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonNetworkNotFound {
		t.Errorf("Programmed = %s/%s, want False/NetworkNotFound", c.Status, c.Reason)
	}
	// A source VIP that blocks programming stays False: it says why.
	r.Effective.SourceVIPReady = engine.Status{Reason: v1alpha1.ReasonSourceVIPEndpointMissing}
	if c := condition(t, Build(prev, wpn(), r), v1alpha1.ConditionSourceVIPReady); c.Status != metav1.ConditionFalse {
		t.Errorf("a missing source-VIP endpoint: SourceVIPReady = %s, want False", c.Status)
	}
}

// programmedHash remembers the last hash programmed completely, through later failures, so the
// controller can tell a lapse from a node that never took a config without writing anything.
func TestProgrammedHashSurvivesLapses(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	w := wpn()
	st := Build(v1alpha1.WindowsProxyNodeStatus{}, w, programmedReport(t0))
	if st.ProgrammedHash != "h1" {
		t.Fatalf("programmedHash = %q after programming h1", st.ProgrammedHash)
	}
	failed := programmedReport(t0.Add(time.Minute))
	failed.HNSErr = errors.New("HNS went away")
	if st = Build(st, w, failed); st.ProgrammedHash != "h1" {
		t.Errorf("programmedHash = %q after a failed sync, want h1 kept", st.ProgrammedHash)
	}
	w.Spec.Hash = "h2"
	blocked := programmedReport(t0.Add(2 * time.Minute))
	blocked.Effective.Programmable = false
	if st = Build(st, w, blocked); st.ProgrammedHash != "h1" || st.ObservedHash != "h2" {
		t.Errorf("a new hash not programmed: programmedHash %q, observedHash %q; want h1, h2", st.ProgrammedHash, st.ObservedHash)
	}
	if st = Build(st, w, programmedReport(t0.Add(3*time.Minute))); st.ProgrammedHash != "h2" {
		t.Errorf("programmedHash = %q after programming h2", st.ProgrammedHash)
	}
}

func TestBuildStatusHealth(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		health *Health
		// status, reason and msg are HealthCheckServing's, when health is known.
		status metav1.ConditionStatus
		reason string
		msg    string
	}{
		"listening": {
			health: &Health{ProxyAddr: "0.0.0.0:10256", Services: 2},
			status: metav1.ConditionTrue, reason: v1alpha1.ReasonHealthCheckListening,
			msg: "proxy health server on 0.0.0.0:10256 and 2 service health servers listening",
		},
		"disabled": {
			health: &Health{Disabled: true},
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonHealthCheckDisabled,
			msg: "--healthz-bind-address is empty: no proxy or service health server runs, so load balancers that probe this node see it unhealthy",
		},
		"ports taken, bounded": {
			health: &Health{ProxyErr: errors.New("in use"), Failures: []healthcheck.Failure{
				{Service: "a/1", Port: 1, Err: errors.New("x")}, {Service: "a/2", Port: 2, Err: errors.New("x")},
				{Service: "a/3", Port: 3, Err: errors.New("x")}, {Service: "a/4", Port: 4, Err: errors.New("x")},
				{Service: "a/5", Port: 5, Err: errors.New("x")},
			}},
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonHealthCheckPortUnavailable,
			msg: "proxy health server: in use; service a/1 health server on port 1: x; service a/2 health server on port 2: x; " +
				"service a/3 health server on port 3: x; and 2 more service health servers; retried every sync",
		},
		// A plan runs no health servers: it claims nothing about them.
		"unknown": {},
	} {
		t.Run(name, func(t *testing.T) {
			r := programmedReport(t0)
			r.Health = tc.health
			st := Build(v1alpha1.WindowsProxyNodeStatus{}, wpn(), r)
			c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionHealthCheckServing)
			if tc.health == nil {
				if c != nil || st.HealthCheck != (v1alpha1.HealthCheckStatus{}) {
					t.Errorf("health unknown, yet HealthCheckServing %+v and health check %+v", c, st.HealthCheck)
				}
				return
			}
			if c == nil || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.msg {
				t.Fatalf("HealthCheckServing = %+v, want %s/%s %q", c, tc.status, tc.reason, tc.msg)
			}
			if st.HealthCheck.ProxyAddress != tc.health.ProxyAddr || st.HealthCheck.ServiceHealthServers != int32(tc.health.Services) {
				t.Errorf("health check = %+v", st.HealthCheck)
			}
		})
	}
}

// TestBehind: a node that falls behind says so once (Programmed=False, ProgrammingBehind, kstatus
// InProgress), the same words at every later beat (no write per beat), leaves a node already not
// programmed as it is, and the sync that catches up writes Programmed again.
func TestBehind(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	programmed := Build(v1alpha1.WindowsProxyNodeStatus{}, wpn(), programmedReport(t0))
	since := t0.Add(time.Minute)
	behind, ok := Behind(programmed, wpn(), since, 60*time.Second, since.Add(61*time.Second))
	if !ok {
		t.Fatal("a programmed node that fell behind was not reported")
	}
	for typ, want := range map[string]string{
		v1alpha1.ConditionProgrammed: "False/" + v1alpha1.ReasonProgrammingBehind, v1alpha1.ConditionReady: "False/" + v1alpha1.ReasonProgrammingBehind,
		v1alpha1.ConditionReconciling: "True/" + v1alpha1.ReasonProgrammingBehind, v1alpha1.ConditionStalled: "False/" + v1alpha1.ReasonAsExpected,
		v1alpha1.ConditionDegraded: "False/" + v1alpha1.ReasonAsExpected,
	} {
		if c := condition(t, behind, typ); string(c.Status)+"/"+c.Reason != want {
			t.Errorf("%s = %s/%s, want %s", typ, c.Status, c.Reason, want)
		}
	}
	later, _ := Behind(behind, wpn(), since, 60*time.Second, since.Add(5*time.Minute))
	if !equality.Semantic.DeepEqual(behind, later) {
		t.Errorf("a later beat while still behind changed the status, a write per beat:\n%s", cmp.Diff(behind, later))
	}
	failed := Build(v1alpha1.WindowsProxyNodeStatus{}, wpn(), Sync{HNSErr: errors.New("boom"), Finished: t0})
	if st, ok := Behind(failed, wpn(), since, time.Minute, since.Add(2*time.Minute)); ok || !equality.Semantic.DeepEqual(st, failed) {
		t.Errorf("a node already not programmed was reported behind: %+v", st.Conditions)
	}
	caughtUp := Build(behind, wpn(), programmedReport(since.Add(90*time.Second)))
	if c := condition(t, caughtUp, v1alpha1.ConditionReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %s/%s after the sync that caught up", c.Status, c.Reason)
	}
}

// The agent skips a build whose Inputs equal those of the last build that changed nothing
// (agent/daemon/statuswrite.go): so whatever Inputs drops, Build must not read. Every field
// Inputs drops is set here as a sync that changed it would set it, and the status must stay.
func TestInputsAreAllBuildReads(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	quiet := programmedReport(t0)
	prev := Build(v1alpha1.WindowsProxyNodeStatus{}, wpn(), quiet)

	busy := programmedReport(t0.Add(time.Hour))
	busy.Duration = 3 * time.Second
	busy.Result.Writes = map[apply.Write]int{apply.WriteLBCreate: 2}
	busy.Result.Calls = []apply.Call{{Op: hns.OpCreateLoadBalancer, ID: "lb-2"}}
	busy.Result.DriftRepairs = apply.DriftRepairs{LoadBalancers: 1, Endpoints: 2}
	busy.Result.Adopted = 3
	busy.Result.Disowned = []string{"lb-1"}
	busy.Result.ForeignReplaced = []string{"10.0.0.10:80/TCP"}
	busy.Result.LBFailures = []apply.LBFailure{{Op: hns.OpDeleteLoadBalancer, Err: errors.New("refused")}}
	if in, want := Inputs(busy), Inputs(quiet); !reflect.DeepEqual(in, want) {
		t.Fatalf("Inputs kept something it drops for the quiet sync:\n%s", cmp.Diff(want, in))
	}
	if st := Build(prev, wpn(), busy); !equality.Semantic.DeepEqual(st, prev) {
		t.Errorf("Build read a field Inputs drops:\n%s", cmp.Diff(prev, st))
	}

	// What Build reads stays in Inputs.
	changed := programmedReport(t0)
	changed.Result.RemoteEndpoints++
	if reflect.DeepEqual(Inputs(changed), Inputs(quiet)) {
		t.Error("Inputs dropped the remote endpoints' count, which the status shows")
	}
}
