package sim

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/winproxy/winproxy/agent/hns"
)

// Version returns the profile's HNS version.
func (s *Sim) Version(ctx context.Context) (hns.Version, error) {
	var v hns.Version
	err := s.call(ctx, OpVersion, "", func(h *host) error {
		v = h.profile.Version
		return nil
	})
	return v, err
}

// GetNetworkByName finds a network by exact name.
func (s *Sim) GetNetworkByName(ctx context.Context, name string) (hns.Network, error) {
	var n hns.Network
	err := s.call(ctx, OpGetNetworkByName, name, func(h *host) error {
		found, ok := h.networkByName(name)
		if !ok {
			return hns.NewError(OpGetNetworkByName, name, hns.CodeNetworkNotFound, nil)
		}
		n = cloneNetwork(found)
		s.counts.HCN += hcnPerObject
		return nil
	})
	return n, err
}

// ListEndpoints lists a network's endpoints in creation order. Like HNS's
// filtered enumerate, an unknown network yields an empty list, not an error.
func (s *Sim) ListEndpoints(ctx context.Context, networkID string) ([]hns.Endpoint, error) {
	var out []hns.Endpoint
	err := s.call(ctx, OpListEndpoints, networkID, func(h *host) error {
		for _, r := range sortedRecs(h.endpoints) {
			if networkID == "" || key(r.obj.NetworkID) == key(networkID) {
				out = append(out, cloneEndpoint(r.obj))
			}
		}
		s.counts.HCN += hcnPerObject * len(out)
		return nil
	})
	return out, err
}

// ListEndpointIDs lists the IDs ListEndpoints would, in no particular order
// (HNS promises none).
func (s *Sim) ListEndpointIDs(ctx context.Context, networkID string) (hns.IDList, error) {
	var out []string
	err := s.call(ctx, OpListEndpointIDs, networkID, func(h *host) error {
		out = make([]string, 0, len(h.endpoints))
		for _, r := range h.endpoints {
			if networkID == "" || hns.SameID(r.obj.NetworkID, networkID) {
				out = append(out, r.obj.ID)
			}
		}
		return nil
	})
	if err != nil {
		return hns.IDList{}, err
	}
	return enumeration(OpListEndpointIDs, networkID, out)
}

// enumeration is HNS's answer to an ID enumeration, a JSON array of the IDs,
// read as the Windows adapter reads HCN's (hns.ParseIDList).
func enumeration(op Op, networkID string, ids []string) (hns.IDList, error) {
	answer := make([]byte, 0, 2+len(ids)*len(`"00000000-0000-0000-0000-000000000000",`))
	answer = append(answer, '[')
	for i, id := range ids {
		if i > 0 {
			answer = append(answer, ',')
		}
		// Invalid UTF-8 is replaced, and the ID then fails as a non-GUID.
		answer, _ = jsontext.AppendQuote(answer, id)
	}
	list, err := hns.ParseIDList(string(append(answer, ']')))
	if err != nil {
		return hns.IDList{}, &hns.Error{Op: op, ID: networkID, Err: err}
	}
	return list, nil
}

// GetEndpointByName returns the first endpoint (in creation order) named name.
func (s *Sim) GetEndpointByName(ctx context.Context, name string) (hns.Endpoint, error) {
	var ep hns.Endpoint
	err := s.call(ctx, OpGetEndpointByName, name, func(h *host) error {
		for _, r := range sortedRecs(h.endpoints) {
			if r.obj.Name == name {
				ep = cloneEndpoint(r.obj)
				s.counts.HCN += hcnPerObject
				return nil
			}
		}
		return hns.NewError(OpGetEndpointByName, name, hns.CodeElementNotFound, hns.ErrEndpointNotFound)
	})
	return ep, err
}

// CreateEndpoint creates an endpoint on a network.
func (s *Sim) CreateEndpoint(ctx context.Context, networkID string, ep hns.Endpoint) (hns.Endpoint, error) {
	var out hns.Endpoint
	err := s.call(ctx, OpCreateEndpoint, ep.Name, func(h *host) error {
		var err error
		out, err = s.createEndpoint(h, OpCreateEndpoint, networkID, ep)
		return err
	})
	return out, err
}

// createEndpoint validates and adds an endpoint; shared with AddLocalEndpoint.
func (s *Sim) createEndpoint(h *host, op Op, networkID string, ep hns.Endpoint) (hns.Endpoint, error) {
	n, ok := h.networks[key(networkID)]
	if !ok {
		return hns.Endpoint{}, hns.NewError(op, networkID, hns.CodeNetworkNotFound, nil)
	}
	v4, v6 := 0, 0
	for _, ip := range ep.IPs {
		switch {
		case ip.Is4():
			v4++
		case ip.Is6():
			v6++
		default:
			return hns.Endpoint{}, hns.NewError(op, ep.Name, hns.CodeInvalidIP, nil)
		}
	}
	if v4 > 1 || v6 > 1 {
		return hns.Endpoint{}, hns.NewError(op, ep.Name, hns.CodeInvalidIP, nil)
	}
	if ep.ProviderAddress.IsValid() && !ep.Remote {
		// A PA policy only makes sense for a remote endpoint.
		return hns.Endpoint{}, hns.NewError(op, ep.Name, hns.CodeInvalidIP, nil)
	}
	for _, ip := range ep.IPs {
		if err := dupIPAllowed(h, n.obj.ID, ip, ep.Remote); err != nil {
			err.Op, err.ID = op, ep.Name
			return hns.Endpoint{}, err
		}
	}
	ep.ID = s.newID(h)
	ep.NetworkID = n.obj.ID
	if ep.MAC == "" {
		ep.MAC = poolMAC(h.seq + 1)
	}
	h.addEndpoint(ep)
	return cloneEndpoint(ep), nil
}

// dupIPAllowed applies the duplicate-IP rule: one endpoint per IP, except
// that on quirky releases one local and one remote endpoint may share it.
func dupIPAllowed(h *host, networkID string, ip netip.Addr, remote bool) *hns.Error {
	holders := h.epByIP[ipKey{key(networkID), ip}]
	if len(holders) == 0 {
		return nil
	}
	if h.profile.DuplicateIPQuirk && len(holders) == 1 {
		for id := range holders {
			if h.endpoints[id].obj.Remote != remote {
				return nil
			}
		}
	}
	return hns.NewError("", "", hns.CodeAlreadyExists, nil)
}

// poolMAC mimics a MAC from the Hyper-V pool (00-15-5D-...) for endpoints
// created without one, as HNS assigns for CNI endpoints.
func poolMAC(n uint64) string {
	return fmt.Sprintf("00-15-5D-%02X-%02X-%02X", byte(n>>16), byte(n>>8), byte(n))
}

// DeleteEndpoint deletes an endpoint. Load balancers still naming it keep
// the dangling ID (HNS's exact behaviour there is not modelled).
func (s *Sim) DeleteEndpoint(ctx context.Context, id string) error {
	return s.call(ctx, OpDeleteEndpoint, id, func(h *host) error {
		if _, ok := h.endpoints[key(id)]; !ok {
			return hns.NewError(OpDeleteEndpoint, id, hns.CodeElementNotFound, hns.ErrEndpointNotFound)
		}
		h.removeEndpoint(id)
		return nil
	})
}

// ListLoadBalancers lists every LB on the host in creation order.
func (s *Sim) ListLoadBalancers(ctx context.Context) ([]hns.LoadBalancer, error) {
	var out []hns.LoadBalancer
	err := s.call(ctx, OpListLoadBalancers, "", func(h *host) error {
		out = objs(h.lbs, cloneLB)
		s.counts.HCN += hcnPerObject * len(out)
		return nil
	})
	return out, err
}

// ListLoadBalancerIDs lists the IDs ListLoadBalancers would, in no
// particular order.
func (s *Sim) ListLoadBalancerIDs(ctx context.Context) (hns.IDList, error) {
	var out []string
	err := s.call(ctx, OpListLoadBalancerIDs, "", func(h *host) error {
		out = make([]string, 0, len(h.lbs))
		for _, r := range h.lbs {
			out = append(out, r.obj.ID)
		}
		return nil
	})
	if err != nil {
		return hns.IDList{}, err
	}
	return enumeration(OpListLoadBalancerIDs, "", out)
}

// GetLoadBalancer returns one LB by ID.
func (s *Sim) GetLoadBalancer(ctx context.Context, id string) (hns.LoadBalancer, error) {
	var out hns.LoadBalancer
	err := s.call(ctx, OpGetLoadBalancer, id, func(h *host) error {
		r, ok := h.lbs[key(id)]
		if !ok {
			return hns.NewError(OpGetLoadBalancer, id, hns.CodeElementNotFound, hns.ErrLoadBalancerNotFound)
		}
		out = cloneLB(r.obj)
		s.counts.HCN += hcnPerObject
		return nil
	})
	return out, err
}

// CreateLoadBalancer creates an LB; a taken frontend tuple is
// HCN_E_PORT_ALREADY_EXISTS.
func (s *Sim) CreateLoadBalancer(ctx context.Context, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	var out hns.LoadBalancer
	op := OpCreateLoadBalancer
	err := s.call(ctx, OpCreateLoadBalancer, lb.Frontend().String(), func(h *host) error {
		if err := validateLB(h, op, "", lb); err != nil {
			return err
		}
		lb.ID = s.newID(h)
		h.addLB(lb)
		out = cloneLB(lb)
		return nil
	})
	return out, err
}

// ModifyLoadBalancer replaces an LB in place; E_NOTIMPL when the profile's
// HNS version lacks the capability. A missing LB is not found on every
// version: hcsshim's updateLoadBalancer opens the LB before it asks HNS to
// modify it (hcn/hcnloadbalancer.go), so the open fails first.
func (s *Sim) ModifyLoadBalancer(ctx context.Context, id string, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	var out hns.LoadBalancer
	op := OpModifyLoadBalancer
	err := s.call(ctx, OpModifyLoadBalancer, id, func(h *host) error {
		r, ok := h.lbs[key(id)]
		if !ok {
			return hns.NewError(op, id, hns.CodeElementNotFound, hns.ErrLoadBalancerNotFound)
		}
		if !h.profile.Capabilities().ModifyLoadBalancer {
			return hns.NewError(op, id, hns.CodeNotImplemented, nil)
		}
		if err := validateLB(h, op, r.obj.ID, lb); err != nil {
			return err
		}
		seq := r.seq
		lb.ID = r.obj.ID
		h.removeLB(id)
		h.putLB(lb, seq)
		out = cloneLB(lb)
		return nil
	})
	return out, err
}

// validateLB checks what HNS (or the simulator, to catch agent bugs) refuses:
// addresses of the wrong family, features the HNS version lacks, unknown
// backends, and a frontend tuple held by another LB. self is the LB being
// modified ("" on create).
func validateLB(h *host, op Op, self string, lb hns.LoadBalancer) error {
	id := self
	if id == "" {
		id = lb.Frontend().String()
	}
	fam := func(a netip.Addr) bool { return a.Is4() && !lb.IsIPv6() || a.Is6() && lb.IsIPv6() }
	for _, v := range lb.FrontendVIPs {
		if !v.IsValid() || !fam(v) {
			return hns.NewError(op, id, hns.CodeInvalidIP, nil)
		}
	}
	if lb.SourceVIP.IsValid() && !fam(lb.SourceVIP) {
		return hns.NewError(op, id, hns.CodeInvalidIP, nil)
	}
	// Simulator choice: refuse features the version lacks instead of
	// silently ignoring them, so an agent that forgets a capability check
	// fails loudly in tests.
	caps := h.profile.Capabilities()
	if (lb.IsDSR() && !caps.DSR) || (lb.IsIPv6() && !caps.IPv6DualStack) ||
		(lb.PortMapping.DistributionType != hns.DistributionNone && !caps.SessionAffinity) {
		return hns.NewError(op, id, hns.CodeNotImplemented, nil)
	}
	for _, be := range lb.BackendEndpointIDs {
		if _, ok := h.endpoints[key(be)]; !ok {
			return hns.NewError(op, be, hns.CodeEndpointNotFound, nil)
		}
	}
	if holder, ok := h.frontends[lb.Frontend()]; ok && holder != key(self) {
		return hns.NewError(op, id, hns.CodePortAlreadyExists, nil)
	}
	return nil
}

// DeleteLoadBalancer deletes an LB by ID.
func (s *Sim) DeleteLoadBalancer(ctx context.Context, id string) error {
	return s.call(ctx, OpDeleteLoadBalancer, id, func(h *host) error {
		if _, ok := h.lbs[key(id)]; !ok {
			return hns.NewError(OpDeleteLoadBalancer, id, hns.CodeElementNotFound, hns.ErrLoadBalancerNotFound)
		}
		h.removeLB(id)
		return nil
	})
}
