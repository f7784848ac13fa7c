package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/internal/testbuild"
)

func withHealthCheckNodePort(p int32) testbuild.ServiceOption {
	return func(s *corev1.Service) { s.Spec.HealthCheckNodePort = p }
}

// TestHealthCheckChanges walks the service health checks of a node through a few events: the
// first read has every check, a later one only those an event changed.
func TestHealthCheckChanges(t *testing.T) {
	c := NewIncremental()
	c.SetNode(nodeName, config(false), nil, view(false, ws2022))
	check := func(port uint16, local int) *ServiceHealthCheck {
		return &ServiceHealthCheck{Port: port, LocalEndpoints: local}
	}
	for _, step := range []struct {
		name   string
		change func()
		want   map[string]*ServiceHealthCheck
	}{
		{"first read: every check", func() {
			// Only an ETP=Local LoadBalancer with a healthCheckNodePort gets a service health server.
			c.SetService(service("web", testbuild.LoadBalancer(30080, "11.21.31.41"), testbuild.ExternalTrafficLocal(), withHealthCheckNodePort(32000)))
			c.SetService(service("cluster", testbuild.LoadBalancer(30081, "11.21.31.42"), withHealthCheckNodePort(0)))
			c.SetService(service("np", testbuild.NodePort(30082), testbuild.ExternalTrafficLocal()))
			c.SetService(service("idle", testbuild.LoadBalancer(30083), testbuild.ExternalTrafficLocal(), withHealthCheckNodePort(32001)))
			c.SetEndpointSlice(slice("web", "web-a", 8080,
				testbuild.Endpoint("10.244.1.5", nodeName),
				testbuild.Endpoint("10.244.1.6", nodeName, testbuild.Conditions("-r+s+t")), // terminating: does not count
				testbuild.Endpoint("10.244.2.5", "node-2"),                                 // remote: does not count
			))
			// The same local pod listed again in a second slice counts once.
			c.SetEndpointSlice(slice("web", "web-b", 8080, testbuild.Endpoint("10.244.1.5", nodeName), testbuild.Endpoint("10.244.1.7", nodeName)))
			c.SetEndpointSlice(sliceFam("web", "web-v6", discoveryv1.AddressTypeIPv6, 8080, testbuild.Endpoint("fd00::5", nodeName)))
		}, map[string]*ServiceHealthCheck{"ns/web": check(32000, 2), "ns/idle": check(32001, 0)}},
		{"nothing happened", func() {}, nil},
		{"a Service without a health check changed", func() {
			c.SetEndpointSlice(slice("cluster", "cluster-a", 8080, testbuild.Endpoint("10.244.1.9", nodeName)))
		}, nil},
		{"a remote endpoint moved: same count", func() {
			c.SetEndpointSlice(slice("web", "web-a", 8080, testbuild.Endpoint("10.244.1.5", nodeName), testbuild.Endpoint("10.244.3.5", "node-3")))
		}, nil},
		{"a slice and a Service deleted", func() {
			c.DeleteEndpointSlice("ns", "web-b")
			c.DeleteService("ns", "idle")
		}, map[string]*ServiceHealthCheck{"ns/web": check(32000, 1), "ns/idle": nil}},
		{"a new port", func() {
			c.SetService(service("web", testbuild.LoadBalancer(30080, "11.21.31.41"), testbuild.ExternalTrafficLocal(), withHealthCheckNodePort(32002)))
		}, map[string]*ServiceHealthCheck{"ns/web": check(32002, 1)}},
		{"externalTrafficPolicy: Cluster", func() {
			c.SetService(service("web", testbuild.LoadBalancer(30080, "11.21.31.41"), withHealthCheckNodePort(0)))
			c.SetService(service("cluster", testbuild.LoadBalancer(30081, "11.21.31.42"), testbuild.ExternalTrafficLocal(), withHealthCheckNodePort(32003)))
		}, map[string]*ServiceHealthCheck{"ns/web": nil, "ns/cluster": check(32003, 1)}},
		{"another node name: every check counted again", func() {
			c.SetNode("node-3", config(false), nil, view(false, ws2022))
		}, map[string]*ServiceHealthCheck{"ns/cluster": check(32003, 0)}},
	} {
		step.change()
		if diff := cmp.Diff(step.want, c.HealthCheckChanges()); diff != "" {
			t.Errorf("%s: HealthCheckChanges (-want +got):\n%s", step.name, diff)
		}
	}
}
