// Package heartbeat decides, from the agents' heartbeat Leases, which nodes' agents are alive, and
// writes that into a WindowsProxyNode status (AgentAlive, and the summary that follows from it).
// It is the node lifecycle controller's method for winproxy's agents, and pure: the controller
// feeds it Lease events and asks it for verdicts; the tests drive it with a clock.
//
// Staleness is measured on the controller's clock from when it last saw a Lease change, never
// from the renew time the agent wrote: a node whose clock is off is not declared dead for it. For
// the same reason a Lease seen only at the controller's start gets a whole grace period.
//
// Cost at fleet scale: a renewal is one map update (Observe); a sweep every quarter grace period
// walks the map once and hands over only the nodes whose heartbeat has just gone stale. While
// every heartbeat is fresh, nothing is reconciled and nothing is written.
package heartbeat

import (
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/conditions"
	"github.com/winproxy/winproxy/internal/nodesummary"
)

// Tracker remembers, per node, the last heartbeat Lease the controller saw and when, and what it
// last reported. It is safe for concurrent use.
type Tracker struct {
	grace     time.Duration
	namespace string
	started   time.Time

	mu    sync.Mutex
	nodes map[string]*entry
}

// entry is one node's last seen Lease.
type entry struct {
	resourceVersion string
	// seen is when the controller saw this version of the Lease; renew is the renew time the
	// agent wrote in it, for messages only.
	seen, renew time.Time
	// stuck is the agent's word that its sync loop is stuck, "" when it renews.
	stuck string
	// reportedDead is true while the node's WindowsProxyNode says AgentAlive=False as far as the
	// tracker knows, or while a stale node has no WindowsProxyNode; sweeps skip such nodes.
	reportedDead bool
	// config is the WindowsProxyConfig of the node's WindowsProxyNode, for the age metric.
	config string
}

// NewTracker returns a tracker for the Leases in namespace, started at now.
func NewTracker(namespace string, grace time.Duration, now time.Time) *Tracker {
	return &Tracker{grace: grace, namespace: namespace, started: now, nodes: map[string]*entry{}}
}

// Grace is how long a heartbeat may be silent.
func (t *Tracker) Grace() time.Duration { return t.grace }

// Observe records l as seen at now, and reports whether the node's verdict may have changed at
// once: its agent was reported dead and renews again, or it says its sync loop is stuck or no
// longer so. A renewal of a live node returns false: the sweep looks at it when it goes stale.
func (t *Tracker) Observe(l *coordinationv1.Lease, now time.Time) (changed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.nodes[l.Name]
	if e == nil {
		e = &entry{}
		t.nodes[l.Name] = e
		changed = true
	}
	if e.resourceVersion == l.ResourceVersion {
		return changed
	}
	stuck := bounded(l.Annotations[v1alpha1.SyncLoopStuckAnnotation])
	changed = changed || e.reportedDead || stuck != e.stuck
	e.resourceVersion, e.seen, e.stuck = l.ResourceVersion, now, stuck
	if l.Spec.RenewTime != nil {
		e.renew = l.Spec.RenewTime.Time
	}
	return changed
}

// Forget drops a node whose Lease was deleted: it is judged as one whose Lease never appeared.
func (t *Tracker) Forget(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.nodes, name)
}

// Reported records what the WindowsProxyNode of node name, a node of config, now says about its
// agent.
func (t *Tracker) Reported(name, config string, alive bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.nodes[name]; e != nil {
		e.reportedDead, e.config = !alive, config
	}
}

// Unselected records that node name has no WindowsProxyNode (no config selects it, yet its agent
// runs): nothing is reported, and the sweep does not hand it over again until it renews.
func (t *Tracker) Unselected(name string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.nodes[name]; e != nil {
		e.reportedDead, e.config = now.Sub(e.seen) > t.grace, ""
	}
}

// Stale lists the nodes whose heartbeat went stale at now and that are not reported dead yet.
func (t *Tracker) Stale(now time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for name, e := range t.nodes {
		if !e.reportedDead && now.Sub(e.seen) > t.grace {
			out = append(out, name)
		}
	}
	return out
}

// Ages calls fn with the heartbeat age at now of each node a config selects, for the age metric.
func (t *Tracker) Ages(now time.Time, fn func(node, config string, age time.Duration)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, e := range t.nodes {
		if e.config != "" {
			fn(name, e.config, now.Sub(e.seen))
		}
	}
}

// Verdict is what the controller reports about a node's agent.
type Verdict struct {
	// Decided is false while the node is too new (or the controller too recently started) to
	// tell a missing Lease from one not created yet; RecheckAt says when it can tell.
	Decided bool
	Alive   bool
	Reason  string
	Message string
	// RecheckAt is when the verdict changes if no Lease event comes; zero when only an event can
	// change it.
	RecheckAt time.Time
}

// Judge says whether the agent of node name is alive at now. created is when the node's
// WindowsProxyNode was created.
func (t *Tracker) Judge(name string, created, now time.Time) Verdict {
	t.mu.Lock()
	defer t.mu.Unlock()
	lease := t.namespace + "/" + name
	e := t.nodes[name]
	if e == nil {
		since := created
		if since.Before(t.started) {
			since = t.started
		}
		if deadline := since.Add(t.grace); now.Before(deadline) {
			return Verdict{RecheckAt: deadline}
		}
		return Verdict{Decided: true, Reason: v1alpha1.ReasonHeartbeatLost, Message: fmt.Sprintf(
			"no heartbeat: Lease %s does not exist %v after the WindowsProxyNode was created (grace period %v); is winproxy-agent running on the node, with --heartbeat-namespace=%s?",
			lease, t.grace, t.grace, t.namespace)}
	}
	if e.stuck != "" {
		return Verdict{Decided: true, Reason: v1alpha1.ReasonSyncLoopStuck, Message: fmt.Sprintf(
			"the agent stopped renewing Lease %s (last renewed %s): its sync loop is stuck: %s; it renews again once the loop makes progress, or the kubelet restarts it",
			lease, timestamp(e.renew), e.stuck)}
	}
	if deadline := e.seen.Add(t.grace); now.After(deadline) {
		return Verdict{Decided: true, Reason: v1alpha1.ReasonHeartbeatLost, Message: fmt.Sprintf(
			"no heartbeat since %s: Lease %s was not renewed within the grace period of %v; the agent is stopped, crash-looping or cannot reach the API server, and the node's HNS is not updated meanwhile",
			timestamp(e.renew), lease, t.grace)}
	}
	return Verdict{Decided: true, Alive: true, Reason: v1alpha1.ReasonHeartbeatRenewed,
		Message:   fmt.Sprintf("the agent renews its heartbeat, Lease %s", lease),
		RecheckAt: e.seen.Add(t.grace)}
}

// maxStuckText bounds what an agent's Lease annotation may put into a condition message.
const maxStuckText = 512

func bounded(s string) string {
	if len(s) <= maxStuckText {
		return s
	}
	r := []rune(s[:maxStuckText])
	return string(r[:len(r)-1]) + "…"
}

func timestamp(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

// Apply writes v into st, a status of wpn, as of now, and reports whether it changed anything
// worth a write: AgentAlive's status or reason. A dead agent vouches for nothing, so Programmed
// goes Unknown with it, and st then describes wpn's generation: the controller has observed that
// nobody acts on it. The summary (Ready, Reconciling, Stalled) follows.
func Apply(st *v1alpha1.WindowsProxyNodeStatus, wpn *v1alpha1.WindowsProxyNode, v Verdict, now time.Time) bool {
	status := metav1.ConditionFalse
	if v.Alive {
		status = metav1.ConditionTrue
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionAgentAlive); c != nil && c.Status == status && c.Reason == v.Reason {
		return false
	}
	set := conditions.For(&st.Conditions, wpn.Generation, now)
	set.Set(v1alpha1.ConditionAgentAlive, status, v.Reason, v.Message)
	if !v.Alive {
		set.Set(v1alpha1.ConditionProgrammed, metav1.ConditionUnknown, v.Reason, "nothing vouches for what HNS holds while the agent is silent: "+v.Message)
		st.ObservedGeneration = wpn.Generation
	}
	nodesummary.Set(st, wpn, now)
	return true
}
