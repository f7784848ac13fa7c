package engine

import (
	"net/netip"
	"unique"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

// ServiceHealthCheck is what a node's service health server answers for one Service: kube-proxy
// serves one per Service that needs a health check (type LoadBalancer with
// externalTrafficPolicy: Local and a healthCheckNodePort), reporting the Service's ready endpoints
// on this node.
type ServiceHealthCheck struct {
	Port uint16
	// LocalEndpoints counts the ready endpoints on this node by IP (an endpoint listed for two
	// ports counts once), in the node's primary IP family; terminating endpoints do not count,
	// so a node that only has terminating endpoints fails the check and is drained.
	LocalEndpoints int
}

// ServiceHealthChecks lists, by "namespace/name", the Services that need a service health server
// on this node. Those Services are indexed as they are set, so a sync reads only them, not every
// Service of the cluster; it is independent of HNS, since a health check reports endpoints, not
// programming.
func (c *Incremental) ServiceHealthChecks() map[string]ServiceHealthCheck {
	family := v1alpha1.IPv4
	if c.ctx != nil && len(c.ctx.families) > 0 {
		family = c.ctx.families[0]
	}
	out := make(map[string]ServiceHealthCheck, len(c.healthChecked))
	for k := range c.healthChecked {
		svc := c.services[k]
		out[k] = ServiceHealthCheck{
			Port:           uint16(svc.HealthCheckNodePort),
			LocalEndpoints: localReadyEndpoints(c.slices[k], family, c.node()),
		}
	}
	return out
}

// node is the handle of the node's name (nodeOf), the zero handle before SetNode.
func (c *Incremental) node() unique.Handle[string] {
	if c.ctx == nil {
		return unique.Handle[string]{}
	}
	return c.ctx.node
}

// needsHealthCheck follows the API's rule (k8s.io/kubernetes pkg/api/v1/service NeedsHealthCheck):
// only LoadBalancer Services with externalTrafficPolicy: Local get a healthCheckNodePort.
func needsHealthCheck(svc *Service) bool {
	return svc.Proxied && svc.LoadBalancer && svc.ExternalTrafficLocal &&
		svc.HealthCheckNodePort > 0 && svc.HealthCheckNodePort <= 65535
}

func localReadyEndpoints(group []*Slice, family v1alpha1.IPFamily, node unique.Handle[string]) int {
	ips := map[netip.Addr]struct{}{}
	for _, s := range group {
		// kube-proxy reads endpoints per slice port: a slice without ports contributes none.
		if s.Family != family || len(s.Ports) == 0 {
			continue
		}
		for i := range s.Endpoints {
			// The EndpointSlice controller sets ready false for terminating endpoints.
			if e := &s.Endpoints[i]; e.Addr.IsValid() && e.on(node) && e.Ready {
				ips[e.Addr.Unmap()] = struct{}{}
			}
		}
	}
	return len(ips)
}
