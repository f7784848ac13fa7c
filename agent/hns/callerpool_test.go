package hns

import (
	"context"
	"encoding/json"
	"net/netip"
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
		<-done
		// The goroutine gives itself back after f returns; wait for it.
		waitFor(t, func() bool { return idle(&p) == 1 })
	}
	// Several at once: each needs a goroutine; afterwards only maxIdleCallers wait.
	release := make(chan struct{})
	started := make(chan struct{}, 2*maxIdleCallers)
	for range 2 * maxIdleCallers {
		p.run(func() { started <- struct{}{}; <-release })
	}
	for range 2 * maxIdleCallers {
		<-started
	}
	if n := idle(&p); n != 0 {
		t.Fatalf("%d idle goroutines while every one is busy", n)
	}
	close(release)
	waitFor(t, func() bool { return idle(&p) == maxIdleCallers })
	// A call that does not return keeps its goroutine; the next call runs beside it.
	hung := make(chan struct{})
	defer close(hung)
	for range maxIdleCallers + 1 {
		p.run(func() { <-hung })
	}
	done := make(chan struct{})
	p.run(func() { close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a call waited behind calls that do not return")
	}
}

func idle(p *callerPool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
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
