package hns

import (
	"context"
	"encoding/json"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// TestCallerPoolKeepsGoroutines checks that calls reuse the goroutines of calls before them, that
// no more than maxIdleCallers wait, and that a call that never returns holds only its own.
func TestCallerPoolKeepsGoroutines(t *testing.T) {
	var p callerPool
	// One call at a time: each runs on the goroutine the one before it gave back.
	for range 10 {
		done := make(chan struct{})
		p.run(func() { close(done) })
		receive(t, done)
		// The goroutine gives itself back after f returns; wait for it.
		waitFor(t, &p, func(idle int) bool { return idle == 1 })
	}
	// Several at once: each needs a goroutine (one taken from the idle, the others new); once
	// they are done, maxIdleCallers of them wait and the others end.
	base := runtime.NumGoroutine()
	release := make(chan struct{})
	started := make(chan struct{})
	for range 2 * maxIdleCallers {
		p.run(func() { started <- struct{}{}; <-release })
	}
	for range 2 * maxIdleCallers {
		receive(t, started)
	}
	if n := idleOf(&p); n != 0 {
		t.Fatalf("%d idle goroutines while every one is busy", n)
	}
	close(release)
	// Every goroutine but maxIdleCallers ends: the one taken from the idle and the new ones.
	ended := base - 1 + maxIdleCallers
	waitFor(t, &p, func(int) bool { return runtime.NumGoroutine() <= ended })
	if n := idleOf(&p); n != maxIdleCallers {
		t.Fatalf("%d idle goroutines after the calls, want %d", n, maxIdleCallers)
	}
	// A call that does not return keeps its goroutine; the next call runs beside it.
	hung := make(chan struct{})
	defer close(hung)
	for range maxIdleCallers + 1 {
		p.run(func() { <-hung })
	}
	done := make(chan struct{})
	p.run(func() { close(done) })
	receive(t, done)
}

func idleOf(p *callerPool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// waitFor waits until cond holds, failing if it does not within 10 s or if more than
// maxIdleCallers goroutines are ever idle.
func waitFor(t *testing.T, p *callerPool, cond func(idle int) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		idle := idleOf(p)
		if idle > maxIdleCallers {
			t.Fatalf("%d idle goroutines, at most %d may wait", idle, maxIdleCallers)
		}
		if cond(idle) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s (%d idle goroutines)", idle)
		}
		time.Sleep(time.Millisecond)
	}
}

// receive takes one value from c, failing if none comes within 10 s.
func receive(t *testing.T, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatal("no call ran within 10s")
	}
}

// encodingClient answers CreateLoadBalancer with the JSON encoding an HNS client does, on the
// calling goroutine: the stack a call needs.
type encodingClient struct{ Client }

func (encodingClient) CreateLoadBalancer(_ context.Context, lb LoadBalancer) (LoadBalancer, error) {
	_, err := json.Marshal(lb)
	return lb, err
}

// BenchmarkBoundedCall is one load balancer write through WithTimeout, with its JSON encoding.
func BenchmarkBoundedCall(b *testing.B) {
	c := WithTimeout(encodingClient{}, time.Minute)
	lb := LoadBalancer{FrontendVIPs: []netip.Addr{netip.MustParseAddr("10.96.0.10")}, PortMapping: PortMapping{Protocol: 6, InternalPort: 53, ExternalPort: 53}}
	for i := range 10 {
		lb.BackendEndpointIDs = append(lb.BackendEndpointIDs, "8C1A6F2E-4A7B-4C1D-9E2F-00000000000"+string(rune('0'+i)))
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.CreateLoadBalancer(ctx, lb); err != nil {
			b.Fatal(err)
		}
	}
}
