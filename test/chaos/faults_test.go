//go:build !windows

package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/winproxy/winproxy/agent/hns/sim"
)

// TestFaultRates makes HNS fail a share of its calls while the cluster changes, then stops the
// faults: the agent must converge to the exact state within seconds (failed objects are retried on
// their own backoff, not after a sync period), with no load balancer lost meanwhile and nothing
// leaked.
func TestFaultRates(t *testing.T) {
	rates := scale([]float64{0.3}, []float64{0.1, 0.2, 0.3})
	burst := scale(5*time.Second, 30*time.Second)
	r := newRig(t, scale(40, 200))
	if _, err := r.settle(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, rate := range rates {
		t.Run(fmt.Sprintf("%.0f%%", rate*100), func(t *testing.T) {
			s := r.sample()
			r.weather(sim.Weather{FailureRate: rate, Seed: int64(rate * 1000)})
			ctx, stop := context.WithCancel(context.Background())
			churned := make(chan int)
			go r.churn(ctx, churned)
			time.Sleep(burst)
			stop()
			changes := <-churned
			r.weather(sim.Weather{})
			took, err := r.settle(time.Minute)
			s.finish()
			if err != nil {
				t.Fatal(err)
			}
			if s.losses > 0 {
				t.Errorf("%d of %d samples missed a load balancer the cluster wants, e.g. %v", s.losses, s.samples, s.examples)
			}
			// Seconds, not minutes: the retry delays are capped at 10 s.
			if took > 30*time.Second {
				t.Errorf("converged %v after the faults stopped, want seconds", took)
			}
			record("fault rate %.0f%%: %v of faults during %d endpoint changes; converged %v after they stopped; %d samples, %d missed a load balancer; leaks 0",
				rate*100, burst, changes, took.Round(100*time.Millisecond), s.samples, s.losses)
		})
	}
}
