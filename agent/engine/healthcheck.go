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

// healthChecks follows the Services that need a service health server on this node, and what
// each last reported, so that a sync reads only the checks an event may have changed: with every
// check built on each sync, an event cost a map and a count of local endpoints per LoadBalancer
// Service with externalTrafficPolicy: Local in the cluster (kube-proxy builds them all on each
// sync).
type healthChecks struct {
	// needed are the Services that need a health server, kept as Services are set.
	needed map[string]struct{}
	// touched are those whose check may have changed since HealthCheckChanges last ran: the
	// Service or one of its slices was set or deleted.
	touched map[string]struct{}
	// reported is what HealthCheckChanges last returned for each Service, as of family and node:
	// another primary family or node name changes every count.
	reported map[string]ServiceHealthCheck
	family   v1alpha1.IPFamily
	node     unique.Handle[string]
}

func newHealthChecks() healthChecks {
	return healthChecks{needed: map[string]struct{}{}, touched: map[string]struct{}{}, reported: map[string]ServiceHealthCheck{}}
}

// setService records whether the Service k needs a health server.
func (h *healthChecks) setService(k string, needs bool) {
	_, before := h.needed[k]
	if needs {
		h.needed[k] = struct{}{}
	} else {
		delete(h.needed, k)
	}
	if needs || before {
		h.touched[k] = struct{}{}
	}
}

// touch notes a change of the Service k's slices; only a Service with a health server cares.
func (h *healthChecks) touch(k string) {
	if _, ok := h.needed[k]; ok {
		h.touched[k] = struct{}{}
	}
}

// HealthCheckChanges returns, by "namespace/name", the service health checks that changed since
// its last call: a Service's new check, or nil for one that needs no health server any more. The
// first call returns every check. Those Services are indexed as they are set and only those an
// event touched are counted again, so an event's sync reads none of the others; it is independent
// of HNS, since a health check reports endpoints, not programming.
func (c *Incremental) HealthCheckChanges() map[string]*ServiceHealthCheck {
	h := &c.health
	family := v1alpha1.IPv4
	if c.ctx != nil && len(c.ctx.families) > 0 {
		family = c.ctx.families[0]
	}
	if node := c.node(); family != h.family || node != h.node {
		h.family, h.node = family, node
		for k := range h.needed {
			h.touched[k] = struct{}{}
		}
		for k := range h.reported {
			h.touched[k] = struct{}{}
		}
	}
	var out map[string]*ServiceHealthCheck
	changed := func(k string, check *ServiceHealthCheck) {
		if out == nil {
			out = map[string]*ServiceHealthCheck{}
		}
		out[k] = check
	}
	for k := range h.touched {
		was, had := h.reported[k]
		if _, ok := h.needed[k]; !ok {
			if had {
				delete(h.reported, k)
				changed(k, nil)
			}
			continue
		}
		now := ServiceHealthCheck{Port: uint16(c.services[k].HealthCheckNodePort), LocalEndpoints: localReadyEndpoints(c.slices[k], family, h.node)}
		if !had || now != was {
			h.reported[k] = now
			changed(k, &now)
		}
	}
	// A new set, not a cleared one: the first call's held every such Service, and ranging over a
	// map costs the room of its largest size.
	if len(h.touched) > 0 {
		h.touched = map[string]struct{}{}
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
