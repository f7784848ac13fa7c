package sim_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
)

// A virtual clock sums the latency of every call instead of sleeping for
// it, and a cancelled call still fails.
func TestVirtualClock(t *testing.T) {
	s := sim.MustNew(sim.WithOpLatency(sim.OpCreateLoadBalancer, time.Hour))
	s.SetLatency(sim.WindowsCallLatency)
	var c sim.VirtualClock
	s.SetVirtualClock(&c)
	start := time.Now()
	if _, err := s.Version(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateLoadBalancer(context.Background(), hns.LoadBalancer{}); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Elapsed(), sim.WindowsCallLatency+time.Hour; got != want {
		t.Errorf("elapsed %v, want %v", got, want)
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("the calls took %v: the latency was slept", took)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Version(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
}
