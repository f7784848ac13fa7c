package hns

import (
	"reflect"
	"testing"
)

// TestOps pins the public names of the operations: sim.Op values name tests and plan's calls,
// metric labels are scraped.
func TestOps(t *testing.T) {
	want := []struct {
		op     Op
		name   string
		metric string
		write  bool
	}{
		{OpVersion, "Version", "version", false},
		{OpGetNetworkByName, "GetNetworkByName", "get_network", false},
		{OpListEndpoints, "ListEndpoints", "list_endpoints", false},
		{OpGetEndpointByName, "GetEndpointByName", "get_endpoint", false},
		{OpCreateEndpoint, "CreateEndpoint", "create_endpoint", true},
		{OpDeleteEndpoint, "DeleteEndpoint", "delete_endpoint", true},
		{OpListLoadBalancers, "ListLoadBalancers", "list_load_balancers", false},
		{OpGetLoadBalancer, "GetLoadBalancer", "get_load_balancer", false},
		{OpCreateLoadBalancer, "CreateLoadBalancer", "create_load_balancer", true},
		{OpModifyLoadBalancer, "ModifyLoadBalancer", "modify_load_balancer", true},
		{OpDeleteLoadBalancer, "DeleteLoadBalancer", "delete_load_balancer", true},
		{OpListEndpointIDs, "ListEndpointIDs", "list_endpoint_ids", false},
		{OpListLoadBalancerIDs, "ListLoadBalancerIDs", "list_load_balancer_ids", false},
	}
	if len(Ops()) != len(want) {
		t.Errorf("Ops() has %d operations, want %d", len(Ops()), len(want))
	}
	for i, w := range want {
		if i < len(Ops()) && Ops()[i] != w.op {
			t.Errorf("Ops()[%d] = %s, want %s", i, Ops()[i], w.op)
		}
		if string(w.op) != w.name || w.op.MetricLabel() != w.metric || w.op.IsWrite() != w.write {
			t.Errorf("%s: name %q, metric label %q, write %v; want %q, %q, %v", w.op, string(w.op), w.op.MetricLabel(), w.op.IsWrite(), w.name, w.metric, w.write)
		}
	}
	// Every Client method has an operation of its name.
	ct := reflect.TypeFor[Client]()
	for i := range ct.NumMethod() {
		if _, ok := metricLabels[Op(ct.Method(i).Name)]; !ok {
			t.Errorf("Client.%s has no Op", ct.Method(i).Name)
		}
	}
	if ct.NumMethod() != len(Ops()) {
		t.Errorf("Client has %d methods, Ops() %d", ct.NumMethod(), len(Ops()))
	}
}
