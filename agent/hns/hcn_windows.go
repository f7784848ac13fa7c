//go:build windows

package hns

import (
	"context"
	"encoding/json"
	"net/netip"

	"github.com/Microsoft/hcsshim/hcn"
)

// windowsClient is the thin adapter over hcsshim's hcn package. It only
// translates types and errors: any behaviour worth testing lives above the
// Client interface, where the simulator exercises it.
type windowsClient struct{}

// NewWindows returns the Client backed by the host's HNS.
func NewWindows() Client { return windowsClient{} }

func (windowsClient) Version(ctx context.Context) (Version, error) {
	if err := ctx.Err(); err != nil {
		return Version{}, err
	}
	g, err := hcn.GetGlobals()
	if err != nil {
		return Version{}, translateErr(OpVersion, "", err, ErrNotFound)
	}
	return Version{Major: g.Version.Major, Minor: g.Version.Minor}, nil
}

func (windowsClient) GetNetworkByName(ctx context.Context, name string) (Network, error) {
	if err := ctx.Err(); err != nil {
		return Network{}, err
	}
	n, err := hcn.GetNetworkByName(name)
	if err != nil {
		return Network{}, translateErr(OpGetNetworkByName, name, err, ErrNetworkNotFound)
	}
	return fromHCNNetwork(n), nil
}

func (windowsClient) ListEndpoints(ctx context.Context, networkID string) ([]Endpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var eps []hcn.HostComputeEndpoint
	var err error
	if networkID == "" {
		eps, err = hcn.ListEndpoints()
	} else {
		eps, err = hcn.ListEndpointsOfNetwork(networkID)
	}
	if err != nil {
		return nil, translateErr(OpListEndpoints, networkID, err, ErrNetworkNotFound)
	}
	out := make([]Endpoint, 0, len(eps))
	for i := range eps {
		out = append(out, fromHCNEndpoint(&eps[i]))
	}
	return out, nil
}

func (windowsClient) GetEndpointByName(ctx context.Context, name string) (Endpoint, error) {
	if err := ctx.Err(); err != nil {
		return Endpoint{}, err
	}
	ep, err := hcn.GetEndpointByName(name)
	if err != nil {
		return Endpoint{}, translateErr(OpGetEndpointByName, name, err, ErrEndpointNotFound)
	}
	return fromHCNEndpoint(ep), nil
}

func (windowsClient) CreateEndpoint(ctx context.Context, networkID string, ep Endpoint) (Endpoint, error) {
	if err := ctx.Err(); err != nil {
		return Endpoint{}, err
	}
	h, err := toHCNEndpoint(ep)
	if err != nil {
		return Endpoint{}, &Error{Op: OpCreateEndpoint, ID: ep.Name, Err: err}
	}
	// The network object only carries the ID: creating needs no network
	// read (winkernel re-reads it every time, one HNS call per endpoint).
	created, err := (&hcn.HostComputeNetwork{Id: networkID}).CreateEndpoint(h)
	if err != nil {
		return Endpoint{}, translateErr(OpCreateEndpoint, ep.Name, err, ErrNetworkNotFound)
	}
	return fromHCNEndpoint(created), nil
}

func (windowsClient) DeleteEndpoint(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := (&hcn.HostComputeEndpoint{Id: id}).Delete(); err != nil {
		return translateErr(OpDeleteEndpoint, id, err, ErrEndpointNotFound)
	}
	return nil
}

func (windowsClient) ListLoadBalancers(ctx context.Context) ([]LoadBalancer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lbs, err := hcn.ListLoadBalancers()
	if err != nil {
		return nil, translateErr(OpListLoadBalancers, "", err, ErrLoadBalancerNotFound)
	}
	out := make([]LoadBalancer, 0, len(lbs))
	for i := range lbs {
		out = append(out, fromHCNLoadBalancer(&lbs[i]))
	}
	return out, nil
}

func (windowsClient) GetLoadBalancer(ctx context.Context, id string) (LoadBalancer, error) {
	if err := ctx.Err(); err != nil {
		return LoadBalancer{}, err
	}
	lb, err := hcn.GetLoadBalancerByID(id)
	if err != nil {
		return LoadBalancer{}, translateErr(OpGetLoadBalancer, id, err, ErrLoadBalancerNotFound)
	}
	return fromHCNLoadBalancer(lb), nil
}

func (windowsClient) CreateLoadBalancer(ctx context.Context, lb LoadBalancer) (LoadBalancer, error) {
	if err := ctx.Err(); err != nil {
		return LoadBalancer{}, err
	}
	created, err := toHCNLoadBalancer(lb).Create()
	if err != nil {
		return LoadBalancer{}, translateErr(OpCreateLoadBalancer, lb.Frontend().String(), err, ErrEndpointNotFound)
	}
	return fromHCNLoadBalancer(created), nil
}

func (windowsClient) ModifyLoadBalancer(ctx context.Context, id string, lb LoadBalancer) (LoadBalancer, error) {
	if err := ctx.Err(); err != nil {
		return LoadBalancer{}, err
	}
	h := toHCNLoadBalancer(lb)
	h.Id = id
	updated, err := h.Update(id)
	if err != nil {
		return LoadBalancer{}, translateErr(OpModifyLoadBalancer, id, err, ErrLoadBalancerNotFound)
	}
	return fromHCNLoadBalancer(updated), nil
}

func (windowsClient) DeleteLoadBalancer(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := (&hcn.HostComputeLoadBalancer{Id: id}).Delete(); err != nil {
		return translateErr(OpDeleteLoadBalancer, id, err, ErrLoadBalancerNotFound)
	}
	return nil
}

// --- type translation ---

func parseAddr(s string) netip.Addr {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return a
}

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

func fromHCNNetwork(n *hcn.HostComputeNetwork) Network {
	out := Network{ID: n.Id, Name: n.Name, Type: NetworkType(n.Type)}
	for _, p := range n.Policies {
		if p.Type != hcn.RemoteSubnetRoute {
			continue
		}
		var s hcn.RemoteSubnetRoutePolicySetting
		if err := json.Unmarshal(p.Settings, &s); err != nil {
			continue // unreadable policy: not one we can route by
		}
		prefix, _ := netip.ParsePrefix(s.DestinationPrefix)
		out.RemoteSubnetRoutes = append(out.RemoteSubnetRoutes, RemoteSubnetRoute{
			DestinationPrefix:    prefix,
			ProviderAddress:      parseAddr(s.ProviderAddress),
			IsolationID:          s.IsolationId,
			DistributedRouterMAC: s.DistributedRouterMacAddress,
		})
	}
	return out
}

func fromHCNEndpoint(e *hcn.HostComputeEndpoint) Endpoint {
	out := Endpoint{
		ID:        e.Id,
		Name:      e.Name,
		NetworkID: e.HostComputeNetwork,
		MAC:       e.MacAddress,
		Remote:    e.Flags&hcn.EndpointFlagsRemoteEndpoint != 0,
	}
	for i, c := range e.IpConfigurations {
		a := parseAddr(c.IpAddress)
		if !a.IsValid() {
			continue
		}
		if i == 0 {
			out.PrefixLength = c.PrefixLength
		}
		out.IPs = append(out.IPs, a)
	}
	for _, p := range e.Policies {
		if p.Type != hcn.NetworkProviderAddress {
			continue
		}
		var s hcn.ProviderAddressEndpointPolicySetting
		if err := json.Unmarshal(p.Settings, &s); err == nil {
			out.ProviderAddress = parseAddr(s.ProviderAddress)
		}
	}
	return out
}

func toHCNEndpoint(ep Endpoint) (*hcn.HostComputeEndpoint, error) {
	h := &hcn.HostComputeEndpoint{
		Name:          ep.Name,
		MacAddress:    ep.MAC,
		SchemaVersion: hcn.V2SchemaVersion(),
	}
	if ep.Remote {
		h.Flags |= hcn.EndpointFlagsRemoteEndpoint
	}
	for i, a := range ep.IPs {
		c := hcn.IpConfig{IpAddress: addrString(a)}
		if i == 0 {
			c.PrefixLength = ep.PrefixLength
		}
		h.IpConfigurations = append(h.IpConfigurations, c)
	}
	if ep.ProviderAddress.IsValid() {
		raw, err := json.Marshal(hcn.ProviderAddressEndpointPolicySetting{ProviderAddress: ep.ProviderAddress.String()})
		if err != nil {
			return nil, err
		}
		h.Policies = append(h.Policies, hcn.EndpointPolicy{Type: hcn.NetworkProviderAddress, Settings: raw})
	}
	return h, nil
}

func fromHCNLoadBalancer(lb *hcn.HostComputeLoadBalancer) LoadBalancer {
	out := LoadBalancer{
		ID:                 lb.Id,
		Flags:              ourLBFlags(lb.Flags),
		SourceVIP:          parseAddr(lb.SourceVIP),
		BackendEndpointIDs: lb.HostComputeEndpoints,
	}
	for _, v := range lb.FrontendVIPs {
		if a := parseAddr(v); a.IsValid() {
			out.FrontendVIPs = append(out.FrontendVIPs, a)
		}
	}
	if len(lb.PortMappings) > 0 {
		pm := lb.PortMappings[0]
		out.PortMapping = PortMapping{
			Protocol:         pm.Protocol,
			InternalPort:     pm.InternalPort,
			ExternalPort:     pm.ExternalPort,
			DistributionType: ourDistribution(pm.DistributionType),
			Flags:            ourPortMappingFlags(pm.Flags),
		}
	}
	return out
}

func toHCNLoadBalancer(lb LoadBalancer) *hcn.HostComputeLoadBalancer {
	h := &hcn.HostComputeLoadBalancer{
		HostComputeEndpoints: lb.BackendEndpointIDs,
		SourceVIP:            addrString(lb.SourceVIP),
		Flags:                hcnLBFlags(lb.Flags),
		SchemaVersion:        hcn.V2SchemaVersion(),
		PortMappings: []hcn.LoadBalancerPortMapping{{
			Protocol:         lb.PortMapping.Protocol,
			InternalPort:     lb.PortMapping.InternalPort,
			ExternalPort:     lb.PortMapping.ExternalPort,
			DistributionType: hcnDistribution(lb.PortMapping.DistributionType),
			Flags:            hcnPortMappingFlags(lb.PortMapping.Flags),
		}},
	}
	for _, v := range lb.FrontendVIPs {
		h.FrontendVIPs = append(h.FrontendVIPs, addrString(v))
	}
	return h
}
