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

func TestServiceHealthChecks(t *testing.T) {
	c := NewIncremental()
	c.SetNode(nodeName, config(false), nil, view(false, ws2022))
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

	want := map[string]ServiceHealthCheck{
		"ns/web":  {Port: 32000, LocalEndpoints: 2},
		"ns/idle": {Port: 32001, LocalEndpoints: 0},
	}
	if diff := cmp.Diff(want, c.ServiceHealthChecks()); diff != "" {
		t.Errorf("ServiceHealthChecks (-want +got):\n%s", diff)
	}

	c.DeleteEndpointSlice("ns", "web-b")
	c.DeleteService("ns", "idle")
	want = map[string]ServiceHealthCheck{"ns/web": {Port: 32000, LocalEndpoints: 1}}
	if diff := cmp.Diff(want, c.ServiceHealthChecks()); diff != "" {
		t.Errorf("after deleting a slice and a service (-want +got):\n%s", diff)
	}
}
