package hns

// Op names an HNS operation, one per Client method: the Op of an *Error, what the simulator
// counts and fails (sim.Op), what winproxy-agent plan lists, and, by MetricLabel, the operation
// label of winproxy_agent_hns_calls_total. The values are public (test names, plan's output,
// metrics): do not change them. (The simulator's changes of a host that are not Client calls,
// such as AddLocalEndpoint, name their errors' Op after themselves.)
type Op string

// The operations of Client.
const (
	OpVersion             Op = "Version"
	OpGetNetworkByName    Op = "GetNetworkByName"
	OpListEndpoints       Op = "ListEndpoints"
	OpGetEndpointByName   Op = "GetEndpointByName"
	OpCreateEndpoint      Op = "CreateEndpoint"
	OpDeleteEndpoint      Op = "DeleteEndpoint"
	OpListLoadBalancers   Op = "ListLoadBalancers"
	OpGetLoadBalancer     Op = "GetLoadBalancer"
	OpCreateLoadBalancer  Op = "CreateLoadBalancer"
	OpModifyLoadBalancer  Op = "ModifyLoadBalancer"
	OpDeleteLoadBalancer  Op = "DeleteLoadBalancer"
	OpListEndpointIDs     Op = "ListEndpointIDs"
	OpListLoadBalancerIDs Op = "ListLoadBalancerIDs"
)

// metricLabels are the operation labels of winproxy_agent_hns_calls_total. The lookups by name
// are get_network and get_endpoint.
var metricLabels = map[Op]string{
	OpVersion:             "version",
	OpGetNetworkByName:    "get_network",
	OpListEndpoints:       "list_endpoints",
	OpGetEndpointByName:   "get_endpoint",
	OpCreateEndpoint:      "create_endpoint",
	OpDeleteEndpoint:      "delete_endpoint",
	OpListLoadBalancers:   "list_load_balancers",
	OpGetLoadBalancer:     "get_load_balancer",
	OpCreateLoadBalancer:  "create_load_balancer",
	OpModifyLoadBalancer:  "modify_load_balancer",
	OpDeleteLoadBalancer:  "delete_load_balancer",
	OpListEndpointIDs:     "list_endpoint_ids",
	OpListLoadBalancerIDs: "list_load_balancer_ids",
}

// Ops lists every operation of Client.
func Ops() []Op {
	return []Op{
		OpVersion, OpGetNetworkByName, OpListEndpoints, OpGetEndpointByName, OpCreateEndpoint,
		OpDeleteEndpoint, OpListLoadBalancers, OpGetLoadBalancer, OpCreateLoadBalancer,
		OpModifyLoadBalancer, OpDeleteLoadBalancer, OpListEndpointIDs, OpListLoadBalancerIDs,
	}
}

// MetricLabel is the operation's label in winproxy_agent_hns_calls_total{operation}, e.g.
// "create_load_balancer"; an operation that is not one of Client's is its own label.
func (o Op) MetricLabel() string {
	if l, ok := metricLabels[o]; ok {
		return l
	}
	return string(o)
}

// IsWrite reports whether the operation changes HNS state.
func (o Op) IsWrite() bool {
	switch o {
	case OpCreateEndpoint, OpDeleteEndpoint, OpCreateLoadBalancer, OpModifyLoadBalancer, OpDeleteLoadBalancer:
		return true
	}
	return false
}
