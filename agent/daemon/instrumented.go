package daemon

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/winproxy/winproxy/agent/hns"
)

// instrumented counts every HNS call by operation and result, so an admin can see from
// winproxy_agent_hns_calls_total what the agent costs HNS (and tests can prove a restart writes
// nothing).
type instrumented struct {
	hns.Client
	calls *prometheus.CounterVec
	// alive is told of every call that returned (a timeout is not an answer), the sync loop's
	// sign of progress for liveness.
	alive func()
}

func (c instrumented) observe(op hns.Op, err error) {
	result := "ok"
	if err != nil {
		result = hns.Reason(err)
	}
	c.calls.WithLabelValues(op.MetricLabel(), result).Inc()
	if c.alive != nil && !hns.IsTimeout(err) {
		c.alive()
	}
}

func (c instrumented) Version(ctx context.Context) (hns.Version, error) {
	v, err := c.Client.Version(ctx)
	c.observe(hns.OpVersion, err)
	return v, err
}

func (c instrumented) GetNetworkByName(ctx context.Context, name string) (hns.Network, error) {
	n, err := c.Client.GetNetworkByName(ctx, name)
	c.observe(hns.OpGetNetworkByName, err)
	return n, err
}

func (c instrumented) ListEndpoints(ctx context.Context, networkID string) ([]hns.Endpoint, error) {
	eps, err := c.Client.ListEndpoints(ctx, networkID)
	c.observe(hns.OpListEndpoints, err)
	return eps, err
}

func (c instrumented) GetEndpointByName(ctx context.Context, name string) (hns.Endpoint, error) {
	ep, err := c.Client.GetEndpointByName(ctx, name)
	c.observe(hns.OpGetEndpointByName, err)
	return ep, err
}

func (c instrumented) CreateEndpoint(ctx context.Context, networkID string, ep hns.Endpoint) (hns.Endpoint, error) {
	out, err := c.Client.CreateEndpoint(ctx, networkID, ep)
	c.observe(hns.OpCreateEndpoint, err)
	return out, err
}

func (c instrumented) DeleteEndpoint(ctx context.Context, id string) error {
	err := c.Client.DeleteEndpoint(ctx, id)
	c.observe(hns.OpDeleteEndpoint, err)
	return err
}

func (c instrumented) ListEndpointIDs(ctx context.Context, networkID string) (hns.IDList, error) {
	ids, err := c.Client.ListEndpointIDs(ctx, networkID)
	c.observe(hns.OpListEndpointIDs, err)
	return ids, err
}

func (c instrumented) ListLoadBalancerIDs(ctx context.Context) (hns.IDList, error) {
	ids, err := c.Client.ListLoadBalancerIDs(ctx)
	c.observe(hns.OpListLoadBalancerIDs, err)
	return ids, err
}

func (c instrumented) ListLoadBalancers(ctx context.Context) ([]hns.LoadBalancer, error) {
	lbs, err := c.Client.ListLoadBalancers(ctx)
	c.observe(hns.OpListLoadBalancers, err)
	return lbs, err
}

func (c instrumented) GetLoadBalancer(ctx context.Context, id string) (hns.LoadBalancer, error) {
	lb, err := c.Client.GetLoadBalancer(ctx, id)
	c.observe(hns.OpGetLoadBalancer, err)
	return lb, err
}

func (c instrumented) CreateLoadBalancer(ctx context.Context, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	out, err := c.Client.CreateLoadBalancer(ctx, lb)
	c.observe(hns.OpCreateLoadBalancer, err)
	return out, err
}

func (c instrumented) ModifyLoadBalancer(ctx context.Context, id string, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	out, err := c.Client.ModifyLoadBalancer(ctx, id, lb)
	c.observe(hns.OpModifyLoadBalancer, err)
	return out, err
}

func (c instrumented) DeleteLoadBalancer(ctx context.Context, id string) error {
	err := c.Client.DeleteLoadBalancer(ctx, id)
	c.observe(hns.OpDeleteLoadBalancer, err)
	return err
}
