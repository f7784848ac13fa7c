package sim

import (
	"context"
	"sync"
	"time"
)

// WindowsCallLatency is what one HNS call costs on Windows in the latency
// model the reboot benchmark uses (docs/windows.md#what-a-call-costs):
// kubernetes/kubernetes#109124 measured a first sync of 2,000 ClusterIP
// services with about 5,000 remote endpoints in one minute on Windows
// Server 2022, at least 7,000 writes, so at most 8.6 ms a write. The source
// does not tell the kinds of call apart, so every call costs the same
// (SetLatency); a list is one call whatever it returns, which after a
// reboot is little.
const WindowsCallLatency = 8600 * time.Microsecond

// VirtualClock is the time a simulator's callers would have waited for its
// latency, summed instead of slept, so that a benchmark measures minutes of
// HNS calls in milliseconds. Calls made at the same time add up as if made
// one after another: it is the clock of a caller that makes one call at a
// time, as the applier does.
type VirtualClock struct {
	mu      sync.Mutex
	elapsed time.Duration
}

// Elapsed is the latency waited so far.
func (c *VirtualClock) Elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.elapsed
}

func (c *VirtualClock) wait(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.elapsed += d
	return ctx.Err()
}

// SetVirtualClock makes the simulator add its latency (SetLatency,
// WithLatency, WithOpLatency, a Weather's) to c instead of sleeping.
func (s *Sim) SetVirtualClock(c *VirtualClock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sleep = c.wait
}
