// Package nodestatus builds the WindowsProxyNode status from what one sync computed (the engine's
// Effective and problems), programmed (the applier's Result) and observed (HNS, the health
// servers). It reads and writes nothing: the agent writes the status it returns, and
// `winproxy-agent plan` shows it, so a plan shows the status the agent would write.
package nodestatus

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winproxy/winproxy/agent/apply"
	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/healthcheck"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/ownership"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/conditions"
	"github.com/winproxy/winproxy/internal/nodesummary"
	"github.com/winproxy/winproxy/internal/version"
)

// Sync is what one sync learned, the input of the status.
type Sync struct {
	// HNSErr is set when the sync could not read HNS or stopped part-way (not running, or another
	// failure).
	HNSErr error
	// Version is the HNS version; WindowsBuild the host's Windows build, when known.
	Version      hns.Version
	WindowsBuild string
	// Effective and Problems are the engine's; Result is what the applier programmed of it.
	Effective engine.Effective
	Result    apply.Result
	Problems  []engine.Problem
	// Health is what the health servers did; nil when nothing is known of them (a plan runs
	// none): the status then keeps HealthCheckServing and the health-check addresses it had.
	Health *Health
	// Finished is when the sync ended, Duration how long it took.
	Finished time.Time
	Duration time.Duration
}

// Health is what a sync learned about the health servers.
type Health struct {
	// ProxyAddr is where the proxy health server listens; ProxyErr why it does not.
	ProxyAddr string
	ProxyErr  error
	// Services is how many service health servers listen; Failures those that cannot.
	Services int
	Failures []healthcheck.Failure
	// Disabled is set when --healthz-bind-address turned the health servers off.
	Disabled bool
}

// Build computes the WindowsProxyNode status from a sync. It keeps condition transition times
// from prev, and keeps prev's lastSyncTime and duration unless something else in the status
// changed: a quiet periodic sync then yields an identical status and no API write.
func Build(prev v1alpha1.WindowsProxyNodeStatus, wpn *v1alpha1.WindowsProxyNode, s Sync) v1alpha1.WindowsProxyNodeStatus {
	if s.HNSErr != nil {
		return hnsFailedStatus(prev, wpn, s)
	}
	st := v1alpha1.WindowsProxyNodeStatus{
		ObservedHash:   wpn.Spec.Hash,
		ProgrammedHash: prev.ProgrammedHash,
		AgentVersion:   version.Version,
		Conditions:     slices.Clone(prev.Conditions),
	}
	c := conditionsOf(&st, wpn, s)
	setHealth(&st, c, s)
	e := s.Effective
	if !e.Programmable {
		e = nothingInEffect(e)
	}
	st.Network = e.Network
	st.SourceVIP = e.SourceVIP
	st.DSR = e.DSR
	st.IPFamilies = e.IPFamilies
	st.IPFamiliesText = FamiliesText(e.IPFamilies)
	st.HNS = v1alpha1.HNSStatus{Version: fmt.Sprintf("%d.%d", s.Version.Major, s.Version.Minor), Capabilities: capabilityNames(hns.CapabilitiesFor(s.Version)), WindowsBuild: s.WindowsBuild}
	st.LoadBalancers = v1alpha1.LoadBalancerCounts{Desired: int32(s.Result.LBsDesired), Programmed: int32(s.Result.LBsProgrammed), Failed: int32(s.Result.LBsFailed)}
	st.RemoteEndpoints = int32(s.Result.RemoteEndpoints)
	st.TopologyRoutedServices = int32(e.TopologyRoutedServices)
	setEffects(c, e)
	if setProgrammed(c, e, s) {
		st.ProgrammedHash = wpn.Spec.Hash
	}
	setOwnership(c, s.Result.Ledger)
	return summarised(prev, st, wpn, s)
}

// Inputs is s less what Build does not read: the sync's time and duration, which only a status
// that changed is stamped with, and the applier's bookkeeping of the sync (its writes and calls,
// repairs, adoptions, disowned and replaced load balancers, failures as winkernel counts them),
// which the events and metrics report. Two syncs with equal Inputs (SameInputs) build the same
// status from the same WindowsProxyNode, but for those stamps: a build that changed nothing
// changes nothing again, so the agent skips it. A field added to Sync or apply.Result is
// compared until it is listed here, and TestInputsAreAllBuildReads fails if Build reads a field
// listed here.
func Inputs(s Sync) Sync {
	s.Finished, s.Duration = time.Time{}, 0
	r := &s.Result
	r.Writes, r.Calls, r.DriftRepairs, r.Adopted, r.Disowned, r.ForeignReplaced, r.LBFailures = nil, nil, apply.DriftRepairs{}, 0, nil, nil, nil
	return s
}

// SameInputs reports whether a and b have the same Inputs, as reflect.DeepEqual of them would
// but that a nil list and an empty one, which build the same status, are the same. It compares
// field by field: the agent asks at every sync, and the reflective comparison was 1.2 % of its CPU
// and 1.4–1.9 of the 33 KiB an EndpointSlice event allocated (BenchmarkAgent, 10k Services).
// TestSameInputsSeesEveryField fails when a field of Sync is neither compared here nor dropped by
// Inputs.
func SameInputs(a, b Sync) bool {
	return sameError(a.HNSErr, b.HNSErr) && a.Version == b.Version && a.WindowsBuild == b.WindowsBuild &&
		sameEffective(&a.Effective, &b.Effective) && sameResultInputs(&a.Result, &b.Result) &&
		slices.Equal(a.Problems, b.Problems) && sameHealth(a.Health, b.Health)
}

func sameEffective(a, b *engine.Effective) bool {
	return a.Network == b.Network && a.NetworkReady == b.NetworkReady && a.Programmable == b.Programmable &&
		a.Blocked == b.Blocked && a.SourceVIP == b.SourceVIP && a.SourceVIPReady == b.SourceVIPReady &&
		a.DSR == b.DSR && a.DSRActive == b.DSRActive && slices.Equal(a.IPFamilies, b.IPFamilies) &&
		a.DualStackDowngraded == b.DualStackDowngraded && a.TopologyRoutedServices == b.TopologyRoutedServices
}

// sameResultInputs compares what Inputs keeps of a Result.
func sameResultInputs(a, b *apply.Result) bool {
	return a.Skipped == b.Skipped && a.LBsDesired == b.LBsDesired && a.LBsProgrammed == b.LBsProgrammed &&
		a.LBsFailed == b.LBsFailed && a.RemoteEndpoints == b.RemoteEndpoints &&
		slices.EqualFunc(a.Failures, b.Failures, func(x, y apply.Failure) bool {
			return x.Object == y.Object && x.Deferred == y.Deferred && sameError(x.Err, y.Err)
		}) &&
		a.Ledger.Path == b.Ledger.Path && a.Ledger.Unsaved == b.Ledger.Unsaved &&
		sameError(a.Ledger.WriteErr, b.Ledger.WriteErr) && sameError(a.Ledger.SpaceErr, b.Ledger.SpaceErr)
}

func sameHealth(a, b *Health) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.ProxyAddr == b.ProxyAddr && sameError(a.ProxyErr, b.ProxyErr) && a.Services == b.Services &&
		a.Disabled == b.Disabled &&
		slices.EqualFunc(a.Failures, b.Failures, func(x, y healthcheck.Failure) bool {
			return x.Service == y.Service && x.Port == y.Port && sameError(x.Err, y.Err)
		})
}

// sameError compares errors as reflect.DeepEqual does. Errors are rare (a sync that failed), so
// only two nil ones are told apart without reflection.
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return reflect.DeepEqual(a, b)
}

// summarised ends every status the agent writes: the generation it describes, the kstatus summary
// of its conditions (which the controller computes the same way when it writes AgentAlive), and
// the sync time.
func summarised(prev, st v1alpha1.WindowsProxyNodeStatus, wpn *v1alpha1.WindowsProxyNode, s Sync) v1alpha1.WindowsProxyNodeStatus {
	st.ObservedGeneration = wpn.Generation
	nodesummary.Set(&st, wpn, s.Finished)
	return withSyncTime(prev, st, s)
}

// hnsFailedStatus is the status after a sync HNS stopped: nothing new is known, so what was
// reported is kept, and Programmed and Degraded say why nothing is programmed now.
func hnsFailedStatus(prev v1alpha1.WindowsProxyNodeStatus, wpn *v1alpha1.WindowsProxyNode, s Sync) v1alpha1.WindowsProxyNodeStatus {
	st := *prev.DeepCopy()
	st.ObservedHash, st.AgentVersion = wpn.Spec.Hash, version.Version
	c := conditionsOf(&st, wpn, s)
	reason, msg := v1alpha1.ReasonSyncFailed, fmt.Sprintf("the last sync stopped on an HNS error: %v; the agent retries with backoff", s.HNSErr)
	if hns.IsHNSNotRunning(s.HNSErr) {
		reason, msg = v1alpha1.ReasonHNSNotRunning, "HNS is not running (0x6b5); programmed state is left as it is and the agent retries"
	}
	c.SetBool(v1alpha1.ConditionProgrammed, false, reason, msg)
	c.SetBool(v1alpha1.ConditionDegraded, true, reason, msg)
	setHealth(&st, c, s)
	return summarised(prev, st, wpn, s)
}

// conditionsOf sets the conditions of a WindowsProxyNode's status, observed at its generation as
// of a sync.
func conditionsOf(st *v1alpha1.WindowsProxyNodeStatus, wpn *v1alpha1.WindowsProxyNode, s Sync) conditions.Setter {
	return conditions.For(&st.Conditions, wpn.Generation, s.Finished)
}

// setHealth reports the health servers: their addresses and HealthCheckServing.
func setHealth(st *v1alpha1.WindowsProxyNodeStatus, c conditions.Setter, s Sync) {
	if s.Health == nil {
		return
	}
	st.HealthCheck = v1alpha1.HealthCheckStatus{ProxyAddress: s.Health.ProxyAddr, ServiceHealthServers: int32(s.Health.Services)}
	ok, reason, msg := healthCondition(*s.Health)
	c.SetBool(v1alpha1.ConditionHealthCheckServing, ok, reason, msg)
}

// setEffects sets the conditions about what is in effect on the node. While nothing is
// programmed, what the node would do once programmable is no claim about what it does now:
// those conditions are Unknown.
func setEffects(c conditions.Setter, e engine.Effective) {
	c.SetBool(v1alpha1.ConditionNetworkReady, e.NetworkReady.True, e.NetworkReady.Reason, e.NetworkReady.Message)
	if e.Programmable || !e.SourceVIPReady.True {
		c.SetBool(v1alpha1.ConditionSourceVIPReady, e.SourceVIPReady.True, e.SourceVIPReady.Reason, e.SourceVIPReady.Message)
	} else {
		c.Set(v1alpha1.ConditionSourceVIPReady, metav1.ConditionUnknown, e.Blocked.Reason, notProgrammed(e))
	}
	if e.Programmable {
		c.SetBool(v1alpha1.ConditionDSRActive, e.DSRActive.True, e.DSRActive.Reason, e.DSRActive.Message)
		c.SetBool(v1alpha1.ConditionDualStackDowngraded, e.DualStackDowngraded.True, e.DualStackDowngraded.Reason, e.DualStackDowngraded.Message)
	} else {
		c.Set(v1alpha1.ConditionDSRActive, metav1.ConditionUnknown, e.Blocked.Reason, notProgrammed(e))
		c.Set(v1alpha1.ConditionDualStackDowngraded, metav1.ConditionUnknown, e.Blocked.Reason, notProgrammed(e))
	}
}

// setProgrammed sets Programmed and Degraded from the sync's result, and reports whether the
// node now runs its spec as wanted.
func setProgrammed(c conditions.Setter, e engine.Effective, s Sync) bool {
	switch {
	case !e.Programmable:
		reason := e.Blocked.Reason
		if reason == "" {
			reason = v1alpha1.ReasonWaitingForNetwork
		}
		c.SetBool(v1alpha1.ConditionProgrammed, false, reason, e.Blocked.Message+"; load balancers already programmed are left as they are")
		c.SetBool(v1alpha1.ConditionDegraded, false, v1alpha1.ReasonAsExpected, "nothing failed; the agent is waiting")
		return false
	case s.Result.LBsFailed > 0 || len(s.Result.Failures) > 0:
		msg := fmt.Sprintf("%d of %d load balancers programmed; %s; failed objects are retried with backoff", s.Result.LBsProgrammed, s.Result.LBsDesired, FailureSummary(s.Result.Failures))
		c.SetBool(v1alpha1.ConditionProgrammed, false, v1alpha1.ReasonSyncFailed, msg)
		c.SetBool(v1alpha1.ConditionDegraded, true, v1alpha1.ReasonSyncFailed, msg)
		return false
	}
	msg := fmt.Sprintf("%d load balancers and %d remote endpoints programmed", s.Result.LBsProgrammed, s.Result.RemoteEndpoints)
	if n := len(s.Problems); n > 0 {
		msg += fmt.Sprintf("; %d %s, e.g. %s: %s", n, plural(n, "problem", "problems"), problemSubject(s.Problems[0]), s.Problems[0].Message)
	}
	c.SetBool(v1alpha1.ConditionProgrammed, true, v1alpha1.ReasonSynced, msg)
	c.SetBool(v1alpha1.ConditionDegraded, false, v1alpha1.ReasonAsExpected, "every desired load balancer is programmed")
	return true
}

// setOwnership sets OwnershipRecorded from how far the ledger's journal keeps up. An in-memory
// ledger (a plan) says nothing of the node's disk: the condition is left as it was.
func setOwnership(c conditions.Setter, l ownership.LedgerStatus) {
	switch {
	case l.Path == "":
	case l.WriteErr != nil:
		c.SetBool(v1alpha1.ConditionOwnershipRecorded, false, v1alpha1.ReasonLedgerNotWritable, fmt.Sprintf(
			"the ownership ledger %s cannot be written: %v; HNS is programmed as usual and %d changes are kept in memory until the disk has room (a restart before then leaves load balancers of Services deleted meanwhile behind)",
			l.Path, l.WriteErr, l.Unsaved))
	case l.SpaceErr != nil:
		c.SetBool(v1alpha1.ConditionOwnershipRecorded, true, v1alpha1.ReasonLedgerSpaceLow, fmt.Sprintf(
			"every change is written to the ownership ledger %s, but the disk is full: %v", l.Path, l.SpaceErr))
	default:
		c.SetBool(v1alpha1.ConditionOwnershipRecorded, true, v1alpha1.ReasonLedgerWritten, "every change is written to the ownership ledger "+l.Path)
	}
}

// FamiliesText is the families as the status writes them in ipFamiliesText: "IPv4,IPv6".
func FamiliesText(fams []v1alpha1.IPFamily) string {
	s := make([]string, len(fams))
	for i, f := range fams {
		s[i] = string(f)
	}
	return strings.Join(s, ",")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// nothingInEffect is what a node that programs nothing this sync has in effect: no IP family, no
// DSR, no source VIP. Its network and the reason it is blocked stay.
func nothingInEffect(e engine.Effective) engine.Effective {
	e.IPFamilies = nil
	e.DSR.Active = false
	e.SourceVIP = v1alpha1.SourceVIPStatus{}
	e.TopologyRoutedServices = 0
	if e.Blocked.Reason == "" {
		e.Blocked.Reason = v1alpha1.ReasonWaitingForNetwork
	}
	return e
}

func notProgrammed(e engine.Effective) string {
	return "nothing is programmed: " + e.Blocked.Message
}

// healthCondition is the HealthCheckServing condition of a sync's health report.
func healthCondition(h Health) (bool, string, string) {
	switch {
	case h.Disabled:
		return false, v1alpha1.ReasonHealthCheckDisabled, "--healthz-bind-address is empty: no proxy or service health server runs, so load balancers that probe this node see it unhealthy"
	case h.ProxyErr != nil || len(h.Failures) > 0:
		return false, v1alpha1.ReasonHealthCheckPortUnavailable, healthFailureSummary(h)
	}
	return true, v1alpha1.ReasonHealthCheckListening, fmt.Sprintf("proxy health server on %s and %d service health servers listening", h.ProxyAddr, h.Services)
}

// healthFailureSummary names the health servers that cannot listen, bounded: a node with many
// failing ports must not grow its status without limit.
func healthFailureSummary(h Health) string {
	var parts []string
	if h.ProxyErr != nil {
		parts = append(parts, fmt.Sprintf("proxy health server: %v", h.ProxyErr))
	}
	for i, f := range h.Failures {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more service health servers", len(h.Failures)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("service %s health server on port %d: %v", f.Service, f.Port, f.Err))
	}
	return strings.Join(parts, "; ") + "; retried every sync"
}

// withSyncTime stamps the sync time and duration only when the rest of the status changed.
func withSyncTime(prev, st v1alpha1.WindowsProxyNodeStatus, s Sync) v1alpha1.WindowsProxyNodeStatus {
	st.LastSyncTime, st.LastSyncDurationMilliseconds = prev.LastSyncTime, prev.LastSyncDurationMilliseconds
	// reflect.DeepEqual first: after a sync that changed nothing, st holds prev's values bit for bit
	// and it answers in a fraction of the semantic comparison's time (a reflective call per
	// timestamp, 4 % of an EndpointSlice event's CPU); the semantic one still decides the rest.
	if st.LastSyncTime != nil && (reflect.DeepEqual(prev, st) || equality.Semantic.DeepEqual(prev, st)) {
		// prev itself, equal to st: the caller's own comparison with the status it holds then
		// meets the same slices and ends at once, instead of walking every condition again
		// after each sync.
		return prev
	}
	t := metav1.NewTime(s.Finished.Truncate(time.Second))
	st.LastSyncTime, st.LastSyncDurationMilliseconds = &t, s.Duration.Milliseconds()
	return st
}

// FailureSummary names the first object a sync failed to program, and how many more failed.
func FailureSummary(fs []apply.Failure) string {
	if len(fs) == 0 {
		return "no error recorded"
	}
	s := fmt.Sprintf("%s: %v", fs[0].Object, fs[0].Err)
	if len(fs) > 1 {
		s += " (and " + strconv.Itoa(len(fs)-1) + " more)"
	}
	return s
}

func problemSubject(p engine.Problem) string {
	if p.Service == "" {
		return "node"
	}
	return "service " + p.Service
}

// capabilityNames lists the HNS capabilities the agent relies on that the version has.
func capabilityNames(c hns.Capabilities) []string {
	var out []string
	for _, n := range []struct {
		ok   bool
		name string
	}{
		{c.RemoteSubnet, "RemoteSubnet"}, {c.DSR, "DSR"}, {c.IPv6DualStack, "IPv6DualStack"},
		{c.SessionAffinity, "SessionAffinity"}, {c.ModifyLoadBalancer, "ModifyLoadBalancer"},
	} {
		if n.ok {
			out = append(out, n.name)
		}
	}
	return out
}

// Behind is prev once the node fell behind: a change has waited for a sync since since, longer
// than timeout (kube-proxy's health timeout, when its /healthz fails), or no sync completed since
// then. Programmed turns False (ProgrammingBehind) and the summary InProgress, so the status says
// so while a long sync is still running, without a write per sync. A node not Programmed already
// says why, and is left as it is (ok is false). The sync that catches up writes Programmed again.
func Behind(prev v1alpha1.WindowsProxyNodeStatus, wpn *v1alpha1.WindowsProxyNode, since time.Time, timeout time.Duration, now time.Time) (st v1alpha1.WindowsProxyNodeStatus, ok bool) {
	if c := meta.FindStatusCondition(prev.Conditions, v1alpha1.ConditionProgrammed); c == nil || c.Status != metav1.ConditionTrue {
		return prev, false
	}
	st = *prev.DeepCopy()
	c := conditions.For(&st.Conditions, wpn.Generation, now)
	c.SetBool(v1alpha1.ConditionProgrammed, false, v1alpha1.ReasonProgrammingBehind, fmt.Sprintf(
		"HNS is behind the cluster: changes since %s are not programmed yet, longer than the health timeout of %v, when kube-proxy's /healthz fails; the sync under way programs them",
		since.UTC().Format(time.RFC3339), timeout))
	nodesummary.Set(&st, wpn, now)
	return st, true
}
