//go:build !windows

package chaos

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"github.com/winproxy/winproxy/agent/hns/sim"
)

// TestKillLoop SIGKILLs the agent again and again while it programs a changing cluster, as a node
// losing power mid-sync would, and restarts it at once, as the kubelet does. No load balancer the
// cluster wants may go missing (sampled every 100 ms), the end state must be exact with nothing
// leaked, and a last restart must write nothing.
func TestKillLoop(t *testing.T) {
	services, kills := scale(60, 200), scale(12, 140)
	r := newRig(t, services)
	if _, err := r.settle(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	// Slow HNS calls make the kills land in the middle of syncs.
	r.weather(sim.Weather{Latency: 10 * time.Millisecond})
	s := r.sample()
	ctx, stopChurn := context.WithCancel(context.Background())
	churned := make(chan int)
	go r.churn(ctx, churned)
	rng := rand.New(rand.NewSource(1))
	for range kills {
		time.Sleep(time.Duration(100+rng.Intn(400)) * time.Millisecond)
		r.agent.Kill()
		if err := r.agent.Start(); err != nil {
			t.Fatal(err)
		}
	}
	stopChurn()
	changes := <-churned
	took, err := r.settle(2 * time.Minute)
	s.finish()
	if err != nil {
		t.Fatal(err)
	}
	if s.losses > 0 {
		t.Errorf("%d of %d samples missed a load balancer the cluster wants, e.g. %v", s.losses, s.samples, s.examples)
	}
	// A restart with nothing changed writes nothing.
	r.weather(sim.Weather{})
	restartWritesNothing(t, r, "after the kill loop")
	record("kill loop: %d SIGKILLs during %d endpoint changes on %d services; %d samples, %d missed a load balancer; settled %v after the last kill; leaks 0; restart writes 0",
		kills, changes, services, s.samples, s.losses, took.Round(100*time.Millisecond))
}

// churn changes one service's remote pods every 50 ms until ctx is done, then says how many changes
// it made.
func (r *rig) churn(ctx context.Context, done chan<- int) {
	n := 0
	defer func() { done <- n }()
	services := len(r.model.remotes)
	for round := 1; ; round++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
		i := round % services
		r.model.churn(i, round)
		if err := r.applySlice(i); err != nil {
			r.t.Errorf("changing %s: %v", svcName(i), err)
			return
		}
		n++
	}
}

// applySlice writes service i's slice as the model has it.
func (r *rig) applySlice(i int) error {
	want := r.model.slice(i)
	var err error
	for range 5 {
		existing := want.DeepCopy()
		if err = r.env.Client.Get(context.Background(), keyOf(want), existing); err != nil {
			continue
		}
		existing.Endpoints = want.Endpoints
		if err = r.env.Client.Update(context.Background(), existing); err == nil {
			return nil
		}
	}
	return err
}

// waitReady waits for the agent's readiness: its first sync since the start is done.
// restartWritesNothing kills the agent, starts it again and, once it has settled and reads
// Ready, fails the test if the restart wrote to HNS: what it had programmed and recorded before
// the kill is all it needs.
func restartWritesNothing(t *testing.T, r *rig, when string) {
	t.Helper()
	r.agent.Kill()
	if err := r.agent.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.settle(time.Minute); err != nil {
		t.Fatal(err)
	}
	waitReady(t, r)
	if w, err := r.agent.HNSWrites(); err != nil || w != 0 {
		t.Errorf("a restart %s made %v HNS writes (%v), want 0: the ledger or the model missed something", when, w, err)
	}
}

func waitReady(t *testing.T, r *rig) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !r.agent.Ready() {
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not become ready:\n%s", r.agent.Tail(10))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
