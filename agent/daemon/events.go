package daemon

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/winproxy/winproxy/agent/healthcheck"
	"github.com/winproxy/winproxy/agent/nodestatus"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// Event reasons of the agent's own. The agent's other Warnings have the reason of the condition
// that says the same (api/v1alpha1: SyncFailed, LedgerNotWritable, NodeNotSelected, ...).
const (
	// eventDriftRepaired: the agent restored load balancers or endpoints deleted behind its back.
	eventDriftRepaired = "DriftRepaired"
	// eventLoadBalancerDisowned: load balancers the ledger recorded as winproxy's were changed
	// behind its back and are no longer proven its own.
	eventLoadBalancerDisowned = "LoadBalancerDisowned"
	// eventForeignLoadBalancerReplaced: a load balancer winproxy did not create blocked a frontend
	// it needs and was replaced.
	eventForeignLoadBalancerReplaced = "ForeignLoadBalancerReplaced"
	// eventFailedToStartServiceHealthcheck is kube-proxy's reason, on the Service, so that existing
	// alerts on it keep working.
	eventFailedToStartServiceHealthcheck = "FailedToStartServiceHealthcheck"
)

// Event actions: what the agent was doing.
const (
	actionSync   = "Sync"
	actionListen = "Listen"
)

// eventInterval is the least time between two Warning events of the same reason about the same
// object: a node that flaps between failing and working must not flood the cluster's events.
const eventInterval = 5 * time.Minute

// eventLimiter remembers when a warning was last recorded, by object and reason.
type eventLimiter struct {
	last map[string]time.Time
}

func (l *eventLimiter) allow(key string, now time.Time) bool {
	if l.last == nil {
		l.last = map[string]time.Time{}
	}
	if t, ok := l.last[key]; ok && now.Sub(t) < eventInterval {
		return false
	}
	l.last[key] = now
	return true
}

// emitEvents records transitions an admin must know about, once per transition and at most once
// per eventInterval for the same reason. Every Warning names the node, so `kubectl get events`
// across the cluster says which Windows node is affected.
func (a *agent) emitEvents(wpn *v1alpha1.WindowsProxyNode, r syncReport) {
	node, now := a.opts.NodeName, r.finished
	warn := func(reason, format string, args ...any) {
		if a.limiter.allow("wpn/"+reason, now) {
			a.events.Eventf(wpn, nil, corev1.EventTypeWarning, reason, actionSync, "node %s: "+format, append([]any{node}, args...)...)
		}
	}
	a.emitHealthEvents(wpn, r.health, now, warn)
	if l := r.result.Ledger; l.WriteErr != nil {
		warn(v1alpha1.ReasonLedgerNotWritable, "the ownership ledger %s cannot be written: %v; HNS is programmed as usual and %d changes are kept in memory until the disk has room", l.Path, l.WriteErr, l.Unsaved)
	}

	failed := r.hnsErr != nil || r.result.LBsFailed > 0 || len(r.result.Failures) > 0
	if failed && !a.lastFailed {
		switch {
		case r.hnsErr != nil:
			warn(v1alpha1.ReasonSyncFailed, "the sync stopped on an HNS error: %v", r.hnsErr)
		default:
			warn(v1alpha1.ReasonSyncFailed, "%d of %d load balancers programmed; %s", r.result.LBsProgrammed, r.result.LBsDesired, nodestatus.FailureSummary(r.result.Failures))
		}
	}
	a.lastFailed = failed
	if r.hnsErr != nil {
		return
	}

	e, prev := r.effective, a.lastEffect
	first := !a.reported
	a.lastEffect, a.reported = e, true
	if !e.NetworkReady.True && (first || prev.NetworkReady.Reason != e.NetworkReady.Reason) {
		warn(e.NetworkReady.Reason, "%s; nothing is programmed until it appears", e.NetworkReady.Message)
	}
	// A source VIP a pod holds needs a person to pick another address: say so once.
	if c := e.SourceVIPReady; c.Reason == v1alpha1.ReasonSourceVIPConflict && (first || prev.SourceVIPReady.Reason != c.Reason) {
		warn(c.Reason, "%s; nothing is programmed until the config names another address", c.Message)
	}
	if !e.Programmable {
		return
	}
	if e.DualStackDowngraded.True && (first || !prev.DualStackDowngraded.True || !prev.Programmable) {
		warn(v1alpha1.ConditionDualStackDowngraded, "dual-stack was requested but only %v is programmed: %s", e.IPFamilies, e.DualStackDowngraded.Message)
	}
	if e.DSR.Requested && !e.DSR.Active && e.DSRActive.Reason == v1alpha1.ReasonDSRUnsupported && (first || prev.DSRActive.Reason != e.DSRActive.Reason) {
		warn(v1alpha1.ReasonDSRUnsupported, "DSR was requested but this host cannot do it: %s", e.DSRActive.Message)
	}
	// Repairs and replacements are facts, not states: each is recorded.
	if d := r.result.DriftRepairs; d.Total() > 0 {
		a.events.Eventf(wpn, nil, corev1.EventTypeWarning, eventDriftRepaired, actionSync, "node %s: restored %d load balancers and %d remote endpoints that were deleted behind the agent's back", node, d.LoadBalancers, d.Endpoints)
	}
	if lbs := r.result.Disowned; len(lbs) > 0 {
		a.events.Eventf(wpn, nil, corev1.EventTypeWarning, eventLoadBalancerDisowned, actionSync, "node %s: %d load balancers recorded as winproxy's were changed behind its back and are no longer proven its own and are left alone unless they block a frontend it needs, e.g. %s", node, len(lbs), lbs[0])
	}
	for _, id := range r.result.ForeignReplaced {
		a.events.Eventf(wpn, nil, corev1.EventTypeWarning, eventForeignLoadBalancerReplaced, actionSync, "node %s: replaced load balancer %s, not created by winproxy, that blocked one of its frontends (as kube-proxy does)", node, id)
	}
}

// emitHealthEvents warns when a health server cannot listen: on the WindowsProxyNode for the proxy
// health server, and, as kube-proxy does, on the Service whose health check port is taken.
func (a *agent) emitHealthEvents(wpn *v1alpha1.WindowsProxyNode, h healthReport, now time.Time, warn func(reason, format string, args ...any)) {
	prev := a.lastHealth
	a.lastHealth = h
	if h.ProxyErr != nil && (prev.ProxyErr == nil || prev.ProxyErr.Error() != h.ProxyErr.Error()) {
		warn(v1alpha1.ReasonHealthCheckPortUnavailable, "the proxy health server cannot listen: %v; load balancers probing this node see it unhealthy", h.ProxyErr)
	}
	was := map[string]bool{}
	for _, f := range prev.Failures {
		was[failureKey(f)] = true
	}
	for _, f := range h.Failures {
		if was[failureKey(f)] || !a.limiter.allow("svc/"+failureKey(f), now) {
			continue
		}
		ns, name, _ := strings.Cut(f.Service, "/")
		ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Service", Namespace: ns, Name: name}
		a.events.Eventf(ref, wpn, corev1.EventTypeWarning, eventFailedToStartServiceHealthcheck, actionListen,
			"node %s failed to start healthcheck %q on port %d: %v", a.opts.NodeName, f.Service, f.Port, f.Err)
	}
}

func failureKey(f healthcheck.Failure) string { return fmt.Sprintf("%s:%d", f.Service, f.Port) }
