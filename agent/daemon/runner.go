package daemon

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Runner paces syncs the way kube-proxy's bounded-frequency runner does: a sync runs at most once per
// minPeriod, so a burst of changes gives one sync, and at least once per period, so drift behind the
// agent's back is found. A failed sync is retried sooner than period, backing off from minPeriod.
type Runner struct {
	clock   clock.Clock
	trigger chan struct{}

	mu        sync.Mutex
	minPeriod time.Duration
	period    time.Duration
}

// NewRunner returns a Runner with the given bounds; SetPeriods changes them while it runs.
func NewRunner(clk clock.Clock, minPeriod, period time.Duration) *Runner {
	r := &Runner{clock: clk, trigger: make(chan struct{}, 1)}
	r.SetPeriods(minPeriod, period)
	return r
}

// SetPeriods changes the bounds; they take effect from the next wait.
func (r *Runner) SetPeriods(minPeriod, period time.Duration) {
	if period <= 0 {
		period = 30 * time.Second
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

// Trigger asks for a sync as soon as minPeriod allows. It never blocks.
func (r *Runner) Trigger() {
	select {
	case r.trigger <- struct{}{}:
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
		select {
		case <-r.trigger:
		default:
		}
		if err := sync(ctx); err != nil {
			failures++
		} else {
			failures = 0
		}
		minPeriod, period := r.periods()
		next := period
		if failures > 0 {
			next = backoff(minPeriod, period, failures)
		}
		// Wait for the period, or a trigger; either way keep minPeriod since the last start.
		periodic := r.clock.NewTimer(next)
		select {
		case <-ctx.Done():
			periodic.Stop()
			return
		case <-periodic.C():
		case <-r.trigger:
			periodic.Stop()
			if wait := minPeriod - r.clock.Since(start); wait > 0 {
				hold := r.clock.NewTimer(wait)
				select {
				case <-ctx.Done():
					hold.Stop()
					return
				case <-hold.C():
				}
			}
		}
	}
}

// backoff is the wait before retrying after the given number of consecutive failed syncs:
// minPeriod (at least a second) doubled per failure, capped at period.
func backoff(minPeriod, period time.Duration, failures int) time.Duration {
	d := max(minPeriod, time.Second)
	for i := 1; i < failures && d < period; i++ {
		d *= 2
	}
	return min(d, period)
}
