package hns

import "context"

// Client is what the agent needs from HNS. Every method is one HNS call on
// Windows (List* being one enumerate+query sequence), so call counts measured
// on the simulator carry over.
//
// Implementations return *Error values classified with the sentinels of
// this package; callers use the Is* helpers.
type Client interface {
	// Version is the HNS version; derive features with CapabilitiesFor.
	Version(ctx context.Context) (Version, error)

	GetNetworkByName(ctx context.Context, name string) (Network, error)

	// ListEndpoints lists the endpoints of one network (all networks when
	// networkID is empty).
	ListEndpoints(ctx context.Context, networkID string) ([]Endpoint, error)
	GetEndpointByName(ctx context.Context, name string) (Endpoint, error)
	// CreateEndpoint creates ep on the network; ID and NetworkID of ep are
	// ignored and the created endpoint is returned.
	CreateEndpoint(ctx context.Context, networkID string, ep Endpoint) (Endpoint, error)
	DeleteEndpoint(ctx context.Context, id string) error

	ListLoadBalancers(ctx context.Context) ([]LoadBalancer, error)

	// ListEndpointIDs and ListLoadBalancerIDs enumerate IDs only (of one
	// network's endpoints, or all when networkID is empty): one HCN call,
	// where a list opens, queries and closes every object. Enough to tell
	// that objects came or went. The IDs stay in HNS's answer (IDList), so
	// that the periodic ID check reads them without a string per ID.
	ListEndpointIDs(ctx context.Context, networkID string) (IDList, error)
	ListLoadBalancerIDs(ctx context.Context) (IDList, error)
	GetLoadBalancer(ctx context.Context, id string) (LoadBalancer, error)
	// CreateLoadBalancer ignores lb.ID and returns the created LB.
	CreateLoadBalancer(ctx context.Context, lb LoadBalancer) (LoadBalancer, error)
	// ModifyLoadBalancer replaces the LB's content in place, keeping its ID.
	// Fails with ErrNotImplemented when HNS lacks the capability.
	ModifyLoadBalancer(ctx context.Context, id string, lb LoadBalancer) (LoadBalancer, error)
	DeleteLoadBalancer(ctx context.Context, id string) error
}
