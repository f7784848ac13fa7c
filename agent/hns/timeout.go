package hns

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// WithTimeout bounds every call of c to d. On Windows an HCN call cannot be cancelled, so a call
// that does not return in time is left running in its goroutine and reported as an *Error of kind
// ErrTimeout: the agent's sync goes on (and says so in its status) instead of hanging forever
// behind a wedged HNS. A write that times out may still complete later; the ownership ledger's
// create intents let the next sync adopt what it created.
func WithTimeout(c Client, d time.Duration) Client {
	if d <= 0 {
		return c
	}
	return timeoutClient{c: c, d: d}
}

type timeoutClient struct {
	c Client
	d time.Duration
}

// bounded runs call with a deadline and gives up waiting for it when the deadline passes. A call
// that gave up because the deadline passed (a client that honours its context) is the same
// timeout as one still running.
func bounded[T any](parent context.Context, d time.Duration, op Op, id string, call func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(parent, d)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	callers.run(func() {
		v, err := call(ctx)
		done <- result{v, err}
	})
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		// An answer that came with the deadline is still an answer.
		select {
		case r = <-done:
		default:
			r.err = ctx.Err()
		}
	}
	if r.err != nil && parent.Err() == nil && errors.Is(r.err, context.DeadlineExceeded) {
		var zero T
		return zero, &Error{Op: op, ID: id, Kind: ErrTimeout, Err: fmt.Errorf("no answer within %v; the call may still complete", d)}
	}
	return r.v, r.err
}

// callers runs the calls WithTimeout bounds, each on a goroutine other than its caller's, as a
// call may outlive its deadline. The goroutines are kept between calls: a new one for every call
// grew its stack in the call's JSON encoding and exchange, copying it each time, and its start,
// stack copies and end were about 5 % of the agent's CPU profile of an EndpointSlice churn
// (BenchmarkAgent, four HNS calls an event; the measured gain is in docs/performance.md).
var callers callerPool

// callerPool keeps up to maxIdleCallers goroutines waiting for a call. A call that never returns
// keeps its goroutine, as before; the next call takes another one.
type callerPool struct {
	mu   sync.Mutex
	idle []chan func()
}

// maxIdleCallers bounds the goroutines waiting between calls. The agent's sync makes one call at
// a time, but more than one can be needed: a call's answer reaches its caller before the goroutine
// is back among the idle, so with more than one thread the next call may start another, and a
// timed-out call's goroutine comes back whenever HNS answers.
const maxIdleCallers = 4

// run runs f on an idle goroutine, or a new one.
func (p *callerPool) run(f func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		c <- f
		return
	}
	p.mu.Unlock()
	c := make(chan func(), 1)
	c <- f
	go p.serve(c)
}

// serve runs what comes on c, waiting idle between calls, until enough others wait.
func (p *callerPool) serve(c chan func()) {
	for f := range c {
		f()
		p.mu.Lock()
		if len(p.idle) >= maxIdleCallers {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, c)
		p.mu.Unlock()
	}
}

type none struct{}

func (t timeoutClient) Version(ctx context.Context) (Version, error) {
	return bounded(ctx, t.d, OpVersion, "", t.c.Version)
}

func (t timeoutClient) GetNetworkByName(ctx context.Context, name string) (Network, error) {
	return bounded(ctx, t.d, OpGetNetworkByName, name, func(ctx context.Context) (Network, error) { return t.c.GetNetworkByName(ctx, name) })
}

func (t timeoutClient) ListEndpoints(ctx context.Context, networkID string) ([]Endpoint, error) {
	return bounded(ctx, t.d, OpListEndpoints, networkID, func(ctx context.Context) ([]Endpoint, error) { return t.c.ListEndpoints(ctx, networkID) })
}

func (t timeoutClient) GetEndpointByName(ctx context.Context, name string) (Endpoint, error) {
	return bounded(ctx, t.d, OpGetEndpointByName, name, func(ctx context.Context) (Endpoint, error) { return t.c.GetEndpointByName(ctx, name) })
}

func (t timeoutClient) CreateEndpoint(ctx context.Context, networkID string, ep Endpoint) (Endpoint, error) {
	return bounded(ctx, t.d, OpCreateEndpoint, networkID, func(ctx context.Context) (Endpoint, error) { return t.c.CreateEndpoint(ctx, networkID, ep) })
}

func (t timeoutClient) DeleteEndpoint(ctx context.Context, id string) error {
	_, err := bounded(ctx, t.d, OpDeleteEndpoint, id, func(ctx context.Context) (none, error) { return none{}, t.c.DeleteEndpoint(ctx, id) })
	return err
}

func (t timeoutClient) ListLoadBalancers(ctx context.Context) ([]LoadBalancer, error) {
	return bounded(ctx, t.d, OpListLoadBalancers, "", t.c.ListLoadBalancers)
}

func (t timeoutClient) ListEndpointIDs(ctx context.Context, networkID string) (IDList, error) {
	return bounded(ctx, t.d, OpListEndpointIDs, networkID, func(ctx context.Context) (IDList, error) { return t.c.ListEndpointIDs(ctx, networkID) })
}

func (t timeoutClient) ListLoadBalancerIDs(ctx context.Context) (IDList, error) {
	return bounded(ctx, t.d, OpListLoadBalancerIDs, "", t.c.ListLoadBalancerIDs)
}

func (t timeoutClient) GetLoadBalancer(ctx context.Context, id string) (LoadBalancer, error) {
	return bounded(ctx, t.d, OpGetLoadBalancer, id, func(ctx context.Context) (LoadBalancer, error) { return t.c.GetLoadBalancer(ctx, id) })
}

func (t timeoutClient) CreateLoadBalancer(ctx context.Context, lb LoadBalancer) (LoadBalancer, error) {
	return bounded(ctx, t.d, OpCreateLoadBalancer, "", func(ctx context.Context) (LoadBalancer, error) { return t.c.CreateLoadBalancer(ctx, lb) })
}

func (t timeoutClient) ModifyLoadBalancer(ctx context.Context, id string, lb LoadBalancer) (LoadBalancer, error) {
	return bounded(ctx, t.d, OpModifyLoadBalancer, id, func(ctx context.Context) (LoadBalancer, error) { return t.c.ModifyLoadBalancer(ctx, id, lb) })
}

func (t timeoutClient) DeleteLoadBalancer(ctx context.Context, id string) error {
	_, err := bounded(ctx, t.d, OpDeleteLoadBalancer, id, func(ctx context.Context) (none, error) { return none{}, t.c.DeleteLoadBalancer(ctx, id) })
	return err
}
