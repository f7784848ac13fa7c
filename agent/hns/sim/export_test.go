package sim

import (
	"context"
	"time"
)

// SetSleep replaces the latency wait so tests never sleep.
func (s *Sim) SetSleep(f func(context.Context, time.Duration) error) { s.sleep = f }
