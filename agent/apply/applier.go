// Package apply programs HNS to match an engine.Desired with as few calls as
// it can: identical load balancers are left alone, changed ones are modified
// in place where HNS supports it, remote endpoints are created before the
// load balancers that need them and deleted after the last one stopped
// using them. It only ever deletes or modifies objects that prove to be its
// own (ownership.Owned: an endpoint by its winproxy- name, a load balancer by the
// content an ownership.Ledger entry records), with the single exception winkernel
// also makes (docs/design/dataplane.md#foreign-load-balancers): a foreign
// load balancer holding exactly the frontend it must create. A load
// balancer identical to one it wants is adopted without a call, so a lost
// ledger costs no blackout.
//
// Drift is repaired: a full Apply runs against a list of the host's load
// balancers and the network's endpoints (Observe) or against what the
// applier recalls of the last one (Recall), so an object deleted behind the
// agent's back is recreated once a list or an ID check (Verify) shows it. A
// sync a change triggered may program only what changed (ApplyChanges).
// Which of these a sync does is decided in one place, agent/syncmode.
// Failed objects are retried on later syncs with exponential backoff
// instead of waiting for the service to change.
package apply

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"k8s.io/utils/clock"

	"github.com/winproxy/winproxy/agent/addrmap"
	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/ownership"
)

// Applier holds the bookkeeping of what it programmed. It is not safe for
// concurrent use; one sync runs at a time.
type Applier struct {
	// raw and owned reach HNS through the model, which sees every write.
	raw   hns.Client
	owned *ownership.Owned
	model *model
	clock clock.PassiveClock
	base  time.Duration
	max   time.Duration

	version   *hns.Version
	networkID string
	// noModify is set after HNS answered E_NOTIMPL to a modify, or accepted
	// one without carrying it out: from then on changed LBs are deleted and
	// recreated (for the process lifetime).
	noModify bool
	// modified holds what this sync's modifies asked for, lastModified the
	// previous sync's: an LB that differs from it was not really modified.
	modified, lastModified map[engine.LBKey]hns.LoadBalancer
	lbIDs                  map[engine.LBKey]string
	epIDs                  addrmap.Map[string]
	retries                map[retryKey]*retry
	index                  *index
	// settled is set when the last sync left HNS exactly as wanted (no
	// failure, nothing skipped): only then can the next one program just
	// what changed (ApplyChanges). remotes is the count of the agent's
	// remote endpoints then.
	settled bool
	remotes int
	// recordCalls keeps each sync's writes in Result.Calls (RecordCalls).
	recordCalls bool
	// starting is set until the first sync of a start (a new process, or
	// the network recreated) got past the source VIP (firstPhases);
	// clusterDNS names the cluster's DNS Service (WithClusterDNS).
	starting   bool
	clusterDNS string
}

type retry struct {
	attempts int
	next     time.Time
	err      error
}

// Option configures New.
type Option func(*Applier)

// RecordCalls makes every sync list its HNS writes, with their reasons, in
// Result.Calls: for winproxy-agent plan. The agent only counts them (a first
// sync at 10k services makes 118,000).
func RecordCalls() Option { return func(a *Applier) { a.recordCalls = true } }

// WithClock sets the clock used for retry backoff.
func WithClock(c clock.PassiveClock) Option { return func(a *Applier) { a.clock = c } }

// New returns an Applier programming c. The ledger records the load
// balancers it creates; reopening the same ledger file after a restart is
// how the new process recognises those that differ from what it wants now
// (it adopts identical ones even without it).
func New(c hns.Client, ledger *ownership.Ledger, opts ...Option) *Applier {
	m := &model{Client: c}
	a := &Applier{
		raw: m, owned: ownership.NewOwned(m, ledger), model: m, clock: clock.RealClock{},
		// A failed object is retried within seconds, not a sync period: a fault that is gone must
		// not leave a service without its load balancer for minutes.
		base: time.Second, max: 10 * time.Second,
		lbIDs: map[engine.LBKey]string{}, retries: map[retryKey]*retry{},
		modified: map[engine.LBKey]hns.LoadBalancer{}, lastModified: map[engine.LBKey]hns.LoadBalancer{},
		index: newIndex(), starting: true, clusterDNS: DefaultClusterDNS,
	}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Observation is what one sync read from HNS.
type Observation struct {
	View          engine.HNSView
	Version       hns.Version
	LoadBalancers []hns.LoadBalancer
}

// Observe reads the network, its endpoints, the host's load balancers and
// (once) the HNS version: three or four reads, no writes. A missing network
// is not an error (View.Found is false); HNS not running is.
func (a *Applier) Observe(ctx context.Context, networkName, hostMAC string) (*Observation, error) {
	o, err := a.observe(ctx, networkName, hostMAC)
	if err != nil || !o.View.Found {
		a.model.forget()
	} else {
		a.model.listed(o.View.Network, o.View.Endpoints, o.LoadBalancers)
	}
	return o, err
}

// CanRecall reports whether the applier holds a list of HNS to start from
// (Recall, LocalView, Verify): none before the first Observe, after a write
// whose outcome only a list can tell, or once the network was recreated.
func (a *Applier) CanRecall() bool { return a.model.valid && a.version != nil }

// Settled reports whether the last sync left HNS exactly as wanted (no
// failure, nothing skipped): only then may the next program just what
// changed.
func (a *Applier) Settled() bool { return a.settled }

// RetriesPending reports whether objects wait for their retry backoff,
// which only a full Apply retries.
func (a *Applier) RetriesPending() bool { return len(a.retries) > 0 }

// Version is the HNS version the first Observe read; zero before.
func (a *Applier) Version() hns.Version {
	if a.version == nil {
		return hns.Version{}
	}
	return *a.version
}

// Recall is what Observe would read if nothing but the applier changed
// the endpoints and load balancers since the last Observe: that
// observation with the applier's own writes applied. It reads only the
// network (one object, not a list: its remote-subnet routes follow the
// CNI). False when there is nothing to trust: no Observe found the network
// yet, a write since failed (which leaves HNS in a state only a list can
// tell), or the network is not the one listed. The agent recalls for syncs
// a change triggered and observes on its own period, which is how it
// finds what others changed (drift). The observation is read-only.
func (a *Applier) Recall(ctx context.Context, networkName, hostMAC string) (*Observation, bool) {
	return a.recall(ctx, networkName, hostMAC, true)
}

// recall is Recall; without reread it takes the network as last read, for
// a sync that has just read it.
func (a *Applier) recall(ctx context.Context, networkName, hostMAC string, reread bool) (*Observation, bool) {
	network, eps, lbs, ok := a.model.recall()
	if !ok || a.version == nil {
		return nil, false
	}
	if reread {
		now, err := a.raw.GetNetworkByName(ctx, networkName)
		if err != nil || !hns.SameID(now.ID, network.ID) {
			return nil, false
		}
		network = a.model.reread(now)
	}
	o := &Observation{Version: *a.version, LoadBalancers: lbs}
	o.View = engine.HNSView{Found: true, Network: network, Endpoints: eps, HostMAC: hostMAC, Capabilities: hns.CapabilitiesFor(*a.version)}
	return o, true
}

// LocalView is the engine's view of HNS for a sync that programs only what
// changed (ApplyChanges): the network and the local endpoints of the model,
// which is all the engine reads of HNS, numbered so that the engine maps
// them again only when they changed. With reread the network is read again
// (one object, for its remote-subnet routes, which follow the CNI) and the
// model keeps it; else it is the network as last read, and LocalView makes
// no HNS call. False when Recall would be, or the network read again is
// not the one listed.
func (a *Applier) LocalView(ctx context.Context, networkName, hostMAC string, reread bool) (engine.HNSView, bool) {
	network, local, version, _, ok := a.model.localView()
	if !ok || a.version == nil {
		return engine.HNSView{}, false
	}
	if reread {
		now, err := a.raw.GetNetworkByName(ctx, networkName)
		if err != nil || !hns.SameID(now.ID, network.ID) {
			return engine.HNSView{}, false
		}
		network = a.model.reread(now)
	}
	return engine.HNSView{Found: true, Network: network, Endpoints: local, EndpointsVersion: version, HostMAC: hostMAC,
		Capabilities: hns.CapabilitiesFor(*a.version)}, true
}

// Verify checks by IDs alone that HNS holds exactly the endpoints and load
// balancers Recall would return: two ID enumerations, no object opened,
// where a list opens, queries and closes every one. It is how the agent
// finds, between full lists, that someone created or deleted objects (the
// CNI replacing a pod's endpoint, an admin deleting a load balancer); a
// change of content in place is found only by a list. False, with no
// call, when there is nothing to recall. The model's fingerprint follows
// every write, so the check folds nothing into the model: folding the
// writes since the last list copies every endpoint and drops the indexes
// the next event's sync would then build again, a cost that grows with the
// cluster once a period.
func (a *Applier) Verify(ctx context.Context) (bool, error) {
	network, _, _, _, ok := a.model.localView()
	if !ok {
		return false, nil
	}
	epIDs, err := a.raw.ListEndpointIDs(ctx, network.ID)
	if err != nil {
		return false, err
	}
	lbIDs, err := a.raw.ListLoadBalancerIDs(ctx)
	if err != nil {
		return false, err
	}
	return a.model.matches(epIDs, lbIDs), nil
}

func (a *Applier) observe(ctx context.Context, networkName, hostMAC string) (*Observation, error) {
	if a.version == nil {
		v, err := a.raw.Version(ctx)
		if err != nil {
			return nil, err
		}
		a.version = &v
	}
	o := &Observation{Version: *a.version}
	o.View.Capabilities = hns.CapabilitiesFor(*a.version)
	o.View.HostMAC = hostMAC
	n, err := a.raw.GetNetworkByName(ctx, networkName)
	switch {
	case hns.IsNotFound(err):
		return o, nil
	case err != nil:
		return nil, err
	}
	o.View.Found, o.View.Network = true, n
	if o.View.Endpoints, err = a.raw.ListEndpoints(ctx, n.ID); err != nil {
		return nil, err
	}
	if o.LoadBalancers, err = a.raw.ListLoadBalancers(ctx); err != nil {
		return nil, err
	}
	return o, nil
}

// noteLedger writes what the ledger holds in memory only, if a write
// failed before (a full disk that has room again), and reports how far
// its journal keeps up. A full disk never fails a sync: the ledger goes on
// in memory (ownership.Ledger).
func (a *Applier) noteLedger(r *Result) {
	_ = a.owned.Ledger.Flush() // Status reports the error
	r.Ledger = a.owned.Ledger.Status()
}

func (a *Applier) backoff(key retryKey, err error) {
	r := a.retries[key]
	if r == nil {
		r = &retry{}
		a.retries[key] = r
	}
	r.attempts++
	d := a.base << min(r.attempts-1, 30)
	if d > a.max || d <= 0 {
		d = a.max
	}
	r.next = a.clock.Now().Add(d)
	r.err = err
}

// NextRetry is how long until the earliest failed object is due for its retry; false when none
// waits. The agent schedules its next sync by it.
func (a *Applier) NextRetry() (time.Duration, bool) {
	var next time.Time
	for _, r := range a.retries {
		if next.IsZero() || r.next.Before(next) {
			next = r.next
		}
	}
	if next.IsZero() {
		return 0, false
	}
	return max(next.Sub(a.clock.Now()), 0), true
}

// waiting reports whether key failed recently and its retry is not due.
func (a *Applier) waiting(key retryKey) bool {
	r := a.retries[key]
	return r != nil && a.clock.Now().Before(r.next)
}

// retryKey names an object whose write failed: a load balancer by key or
// an endpoint by IP. A struct, not a string, so that clearing the retry of
// every programmed LB on every sync formats nothing.
type retryKey struct {
	lb engine.LBKey
	ep netip.Addr
}

func lbRetryKey(k engine.LBKey) retryKey { return retryKey{lb: k} }
func epRetryKey(ip netip.Addr) retryKey  { return retryKey{ep: ip} }

// isFatal reports errors that end the sync: HNS went away or the caller
// gave up. Nothing more can be learnt by trying the other objects.
func isFatal(err error) bool {
	return hns.IsHNSNotRunning(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
