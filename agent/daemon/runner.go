package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

// maxRetryDelay caps the wait before retrying a failed sync or a failed object: a fault must cost
// seconds of convergence once it is gone, never a whole (up to hour-long) sync period.
const maxRetryDelay = 10 * time.Second

// Runner paces syncs the way kube-proxy's bounded-frequency runner does: a sync runs at most once per
// minPeriod, so a burst of changes gives one sync, and at least once per period, so drift behind the
// agent's back is found. A failed sync is retried sooner than period, backing off from minPeriod up
// to maxRetryDelay; a sync that left objects to retry asks for the next one with RetryIn.
type Runner struct {
	clock   clock.Clock
	trigger chan struct{}
	// now is a trigger that minPeriod does not hold back (TriggerNow).
	now chan struct{}

	mu        sync.Mutex
	minPeriod time.Duration
	period    time.Duration
	retryIn   time.Duration
	// lastProgress is when HNS last answered a call or a sync last completed, for liveness.
	lastProgress time.Time
}

// NewRunner returns a Runner with the given bounds; SetPeriods changes them while it runs.
func NewRunner(clk clock.Clock, minPeriod, period time.Duration) *Runner {
	r := &Runner{clock: clk, trigger: make(chan struct{}, 1), now: make(chan struct{}, 1), lastProgress: clk.Now()}
	r.SetPeriods(minPeriod, period)
	return r
}

// SetPeriods changes the bounds; they take effect from the next wait.
func (r *Runner) SetPeriods(minPeriod, period time.Duration) {
	if period <= 0 {
		period = v1alpha1.DefaultSyncPeriodSeconds * time.Second
	}
	if minPeriod > period {
		minPeriod = period
	}
	r.mu.Lock()
	r.minPeriod, r.period = minPeriod, period
	r.mu.Unlock()
}

func (r *Runner) periods() (time.Duration, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.minPeriod, r.period
}

// RetryIn asks, from within a sync, for the next sync no later than d from now (but not before
// minPeriod): the applier's per-object backoff is due then.
func (r *Runner) RetryIn(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.retryIn == 0 || d < r.retryIn {
		r.retryIn = d
	}
}

func (r *Runner) takeRetry() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.retryIn
	r.retryIn = 0
	return d
}

// Progress records a sign of life of the sync loop: HNS answered a call (an error is an answer;
// a call that timed out is not), or a sync completed.
func (r *Runner) Progress() {
	r.mu.Lock()
	r.lastProgress = r.clock.Now()
	r.mu.Unlock()
}

// Stuck reports why the sync loop is stuck, or "" when it is alive: neither has HNS answered a
// call nor has a sync completed for timeout. A long sync that keeps calling HNS is alive however
// long it takes, and so is a node that is waiting for its network or for HNS to start (HNS answers
// that it is not running); a loop behind a wedged HNS, whose calls time out, is not.
func (r *Runner) Stuck(timeout time.Duration) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if idle := r.clock.Since(r.lastProgress); idle > timeout {
		return fmt.Sprintf("HNS has not answered and no sync has completed for %v", idle.Round(time.Second))
	}
	return ""
}

// Trigger asks for a sync as soon as minPeriod allows. It never blocks.
func (r *Runner) Trigger() {
	select {
	case r.trigger <- struct{}{}:
	default:
	}
}

// TriggerNow asks for a sync right away, even inside minPeriod: for a new WindowsProxyNode spec,
// which may carry the pacing itself. A config whose minPeriodSeconds was an hour must not make its
// own fix, or the next config, wait that hour. The controller's rollout paces spec changes, so this
// cannot turn a burst into a sync storm. It never blocks.
func (r *Runner) TriggerNow() {
	select {
	case r.now <- struct{}{}:
	default:
	}
}

// Run calls sync until ctx is done: once right away, then on triggers and periodically. It returns
// when ctx is done; a sync in progress is allowed to finish.
func (r *Runner) Run(ctx context.Context, sync func(context.Context) error) {
	failures := 0
	for {
		start := r.clock.Now()
		// A trigger that arrived before this sync started is covered by it.
		for _, c := range []chan struct{}{r.trigger, r.now} {
			select {
			case <-c:
			default:
			}
		}
		if err := sync(ctx); err != nil {
			failures++
		} else {
			failures = 0
			r.Progress()
		}
		minPeriod, period := r.periods()
		next := period
		if failures > 0 {
			next = backoff(minPeriod, period, failures)
		}
		if retry := r.takeRetry(); retry > 0 {
			next = min(next, max(retry, minPeriod))
		}
		// Wait for the period, or a trigger; either way keep minPeriod since the last start.
		periodic := r.clock.NewTimer(next)
		select {
		case <-ctx.Done():
			periodic.Stop()
			return
		case <-periodic.C():
		case <-r.now:
			periodic.Stop()
		case <-r.trigger:
			periodic.Stop()
			if wait := minPeriod - r.clock.Since(start); wait > 0 {
				hold := r.clock.NewTimer(wait)
				select {
				case <-ctx.Done():
					hold.Stop()
					return
				case <-hold.C():
				case <-r.now:
					hold.Stop()
				}
			}
		}
	}
}

// backoff is the wait before retrying after the given number of consecutive failed syncs:
// minPeriod (at least a second) doubled per failure, capped at period and at maxRetryDelay (or
// minPeriod, when that is longer).
func backoff(minPeriod, period time.Duration, failures int) time.Duration {
	limit := min(period, max(maxRetryDelay, minPeriod))
	d := max(minPeriod, time.Second)
	for i := 1; i < failures && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}
