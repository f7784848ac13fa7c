package conformance

import (
	"context"
	"runtime"
	"time"

	"github.com/winproxy/winproxy/agent/hns"
)

// measure runs fn and, when w is measured, returns its cost: the simulated
// host's counts, the process's CPU time and allocations, and the time spent
// inside the host. The upstream driver measures its side the same way.
func (w *winproxyRun) measure(fn func()) Cost {
	if !w.measured {
		fn()
		return Cost{}
	}
	// What earlier steps left is not this step's garbage.
	runtime.GC()
	counts := w.host.Counts()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	allocs, bytes := ms.Mallocs, ms.TotalAlloc
	cpu := cpuNanos()
	w.inHost = 0
	fn()
	c := Cost{CPUNanos: cpuNanos() - cpu, FakeNanos: int64(w.inHost)}
	runtime.ReadMemStats(&ms)
	c.Allocs, c.Bytes = ms.Mallocs-allocs, ms.TotalAlloc-bytes
	after := w.host.Counts()
	c.HNSReads, c.HNSWrites, c.HCN = after.Reads-counts.Reads, after.Writes-counts.Writes, after.HCN-counts.HCN
	return c
}

// timedClient adds the wall time of every call to *in: the simulated host's
// share of a step, which on Windows is HNS's own work. The ID enumerations
// of the periodic check, which no measured step makes, pass through.
type timedClient struct {
	hns.Client
	in *time.Duration
}

func (t timedClient) since(start time.Time) { *t.in += time.Since(start) }

func (t timedClient) Version(ctx context.Context) (hns.Version, error) {
	defer t.since(time.Now())
	return t.Client.Version(ctx)
}

func (t timedClient) GetNetworkByName(ctx context.Context, name string) (hns.Network, error) {
	defer t.since(time.Now())
	return t.Client.GetNetworkByName(ctx, name)
}

func (t timedClient) ListEndpoints(ctx context.Context, networkID string) ([]hns.Endpoint, error) {
	defer t.since(time.Now())
	return t.Client.ListEndpoints(ctx, networkID)
}

func (t timedClient) GetEndpointByName(ctx context.Context, name string) (hns.Endpoint, error) {
	defer t.since(time.Now())
	return t.Client.GetEndpointByName(ctx, name)
}

func (t timedClient) CreateEndpoint(ctx context.Context, networkID string, ep hns.Endpoint) (hns.Endpoint, error) {
	defer t.since(time.Now())
	return t.Client.CreateEndpoint(ctx, networkID, ep)
}

func (t timedClient) DeleteEndpoint(ctx context.Context, id string) error {
	defer t.since(time.Now())
	return t.Client.DeleteEndpoint(ctx, id)
}

func (t timedClient) ListLoadBalancers(ctx context.Context) ([]hns.LoadBalancer, error) {
	defer t.since(time.Now())
	return t.Client.ListLoadBalancers(ctx)
}

func (t timedClient) GetLoadBalancer(ctx context.Context, id string) (hns.LoadBalancer, error) {
	defer t.since(time.Now())
	return t.Client.GetLoadBalancer(ctx, id)
}

func (t timedClient) CreateLoadBalancer(ctx context.Context, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	defer t.since(time.Now())
	return t.Client.CreateLoadBalancer(ctx, lb)
}

func (t timedClient) ModifyLoadBalancer(ctx context.Context, id string, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	defer t.since(time.Now())
	return t.Client.ModifyLoadBalancer(ctx, id, lb)
}

func (t timedClient) DeleteLoadBalancer(ctx context.Context, id string) error {
	defer t.since(time.Now())
	return t.Client.DeleteLoadBalancer(ctx, id)
}
