package sim

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// The weather is set from outside and felt by every process sharing the host: here a second
// handle on the same state file stands for the agent.
func TestWeatherIsSharedThroughTheStateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hns.json")
	outside, err := New(WithStateFile(path))
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Close()
	agent, err := New(WithStateFile(path))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	ctx := context.Background()

	if err := outside.SetWeather(Weather{FailureRate: 1, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.ListLoadBalancers(ctx); err == nil {
		t.Error("a call succeeded with a failure rate of 1")
	}
	if err := outside.SetWeather(Weather{Latency: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := agent.ListLoadBalancers(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("a call took %v with 50ms of latency", d)
	}
	if err := outside.SetWeather(Weather{}); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.ListLoadBalancers(ctx); err != nil {
		t.Errorf("calm weather: %v", err)
	}
	if c := agent.Counts(); c.Calls[OpListLoadBalancers] != 3 || c.Failures != 1 {
		t.Errorf("counts %+v: want 3 calls, 1 failure", c)
	}
}
