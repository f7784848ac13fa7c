package daemon

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// syncRecorder counts syncs and lets the test wait for each one without sleeping.
type syncRecorder struct {
	done chan time.Time
	clk  *clocktesting.FakeClock
	fail bool
	// retryOnce, when set, is what the first sync asks of the runner with RetryIn, from within the
	// sync as the daemon's sync does: asked from the test's goroutine, the request could arrive
	// after the runner had already chosen its next wait.
	retryOnce time.Duration
	runner    *Runner
}

func (s *syncRecorder) sync(context.Context) error {
	if s.retryOnce > 0 {
		s.runner.RetryIn(s.retryOnce)
		s.retryOnce = 0
	}
	s.done <- s.clk.Now()
	if s.fail {
		return errors.New("sync failed")
	}
	return nil
}

func (s *syncRecorder) wait(t *testing.T) time.Time {
	t.Helper()
	select {
	case at := <-s.done:
		return at
	case <-time.After(10 * time.Second):
		t.Fatal("no sync happened")
		return time.Time{}
	}
}

func (s *syncRecorder) none(t *testing.T) {
	t.Helper()
	select {
	case at := <-s.done:
		t.Fatalf("unexpected sync at %v", at)
	default:
	}
}

// waitForTimer blocks until the runner waits on a timer, so that stepping the fake clock is not lost.
func waitForTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("runner never waited")
		}
		time.Sleep(time.Millisecond)
	}
}

func start(t *testing.T, fail bool) (*Runner, *syncRecorder, *clocktesting.FakeClock) {
	return startWith(t, &syncRecorder{fail: fail})
}

// startWith runs a runner (minPeriod 2s, period 30s) on a fake clock that syncs into rec.
func startWith(t *testing.T, rec *syncRecorder) (*Runner, *syncRecorder, *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	rec.done, rec.clk = make(chan time.Time, 16), clk
	r := NewRunner(clk, 2*time.Second, 30*time.Second)
	rec.runner = r
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { r.Run(ctx, rec.sync); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })
	return r, rec, clk
}

func TestRunnerSyncsAtStartAndPeriodically(t *testing.T) {
	_, rec, clk := start(t, false)
	rec.wait(t)
	waitForTimer(t, clk)
	clk.Step(29 * time.Second)
	rec.none(t)
	clk.Step(time.Second)
	if at := rec.wait(t); at.Sub(time.Unix(0, 0)) != 30*time.Second {
		t.Errorf("periodic sync at %v, want 30s", at.Sub(time.Unix(0, 0)))
	}
}

func TestRunnerBurstGivesOneSyncAfterMinPeriod(t *testing.T) {
	r, rec, clk := start(t, false)
	rec.wait(t)
	waitForTimer(t, clk)
	for range 10 {
		r.Trigger()
	}
	// The trigger is held until minPeriod has passed since the last sync started. The runner reads
	// the clock and then sets its hold timer, so the clock moves in small steps: a step between the
	// two delays the sync by one step, never by the hold.
	at := stepUntilSync(t, rec, clk, 100*time.Millisecond)
	if d := at.Sub(time.Unix(0, 0)); d < 2*time.Second || d > 2500*time.Millisecond {
		t.Errorf("burst synced at %v, want once minPeriod (2s) has passed", d)
	}
	waitForTimer(t, clk)
	rec.none(t)
}

// stepUntilSync moves the fake clock by step until the runner syncs, and returns when it did.
func stepUntilSync(t *testing.T, rec *syncRecorder, clk *clocktesting.FakeClock, step time.Duration) time.Time {
	t.Helper()
	for range 100 {
		waitForTimer(t, clk)
		clk.Step(step)
		select {
		case at := <-rec.done:
			return at
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("no sync happened")
	return time.Time{}
}

// TestRunnerTriggerNowIsNotHeld: a new WindowsProxyNode spec syncs at once, whether the runner
// waits for its period or holds a trigger for minPeriod.
func TestRunnerTriggerNowIsNotHeld(t *testing.T) {
	r, rec, clk := start(t, false)
	rec.wait(t)
	waitForTimer(t, clk)
	r.TriggerNow()
	if at := rec.wait(t); at != time.Unix(0, 0) {
		t.Errorf("sync at %v, want at once", at.Sub(time.Unix(0, 0)))
	}
	waitForTimer(t, clk)
	r.Trigger()
	rec.none(t)
	r.TriggerNow()
	if at := rec.wait(t); at != time.Unix(0, 0) {
		t.Errorf("held sync at %v, want at once", at.Sub(time.Unix(0, 0)))
	}
	waitForTimer(t, clk)
	rec.none(t)
}

func TestRunnerBacksOffAfterFailures(t *testing.T) {
	_, rec, clk := start(t, true)
	rec.wait(t)
	var waits []time.Duration
	last := clk.Now()
	for range 3 {
		waitForTimer(t, clk)
		clk.Step(time.Second)
		for {
			select {
			case at := <-rec.done:
				waits = append(waits, at.Sub(last))
				last = at
			default:
				waitForTimer(t, clk)
				clk.Step(time.Second)
				continue
			}
			break
		}
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second}
	for i := range want {
		if waits[i] != want[i] {
			t.Errorf("retry waits = %v, want %v", waits, want)
			break
		}
	}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		min, period time.Duration
		failures    int
		want        time.Duration
	}{
		{0, 30 * time.Second, 1, time.Second},
		{2 * time.Second, 30 * time.Second, 3, 8 * time.Second},
		{2 * time.Second, 30 * time.Second, 10, maxRetryDelay},
		{2 * time.Second, 5 * time.Second, 10, 5 * time.Second},
		{20 * time.Second, 60 * time.Second, 10, 20 * time.Second},
	} {
		if got := backoff(tc.min, tc.period, tc.failures); got != tc.want {
			t.Errorf("backoff(%v, %v, %d) = %v, want %v", tc.min, tc.period, tc.failures, got, tc.want)
		}
	}
}

func TestRunnerRetriesFailedObjectsBeforeThePeriod(t *testing.T) {
	_, rec, clk := startWith(t, &syncRecorder{retryOnce: 3 * time.Second}) // as a sync that left a failed object would
	rec.wait(t)
	waitForTimer(t, clk)
	clk.Step(3 * time.Second)
	if at := rec.wait(t); at.Sub(time.Unix(0, 0)) != 3*time.Second {
		t.Errorf("retry sync at %v, want 3s", at.Sub(time.Unix(0, 0)))
	}
	// Without a retry request the next sync waits for the period again.
	waitForTimer(t, clk)
	clk.Step(3 * time.Second)
	rec.none(t)
}

func TestRunnerStuck(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	r := NewRunner(clk, time.Second, 30*time.Second)
	if why := r.Stuck(time.Minute); why != "" {
		t.Errorf("a new runner is stuck: %s", why)
	}
	for range 3 {
		clk.Step(50 * time.Second)
		r.Progress() // a long sync whose HNS calls keep answering
	}
	if why := r.Stuck(time.Minute); why != "" {
		t.Errorf("a long sync that keeps calling HNS is stuck: %s", why)
	}
	clk.Step(61 * time.Second)
	if why := r.Stuck(time.Minute); why == "" {
		t.Error("no HNS answer and no completed sync for over a minute is not stuck")
	}
}
