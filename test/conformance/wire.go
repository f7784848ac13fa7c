package conformance

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// The types below are what the upstream driver reads and writes (their
// mirror is upstream/driver/driver.go). Both sides run the same Cluster;
// each answers with what its HNS holds after every step.

// Cluster is one node under test: its HNS host, proxy settings, and a
// sequence of steps, each ending in a sync.
type Cluster struct {
	Name     string `json:"name"`
	NodeName string `json:"nodeName"`
	// NodeIPs by family ("IPv4", "IPv6").
	NodeIPs map[string]string `json:"nodeIPs"`
	// Families are the families proxied, primary first: two only for
	// dual-stack, which needs L2Bridge and HNS dual-stack support.
	Families []string `json:"families"`
	Network  Network  `json:"network"`
	// HNSVersion ("13.3") picks winproxy's simulated host; Features are
	// what that version supports, as upstream's fake is told.
	HNSVersion string   `json:"hnsVersion"`
	Features   Features `json:"features"`
	HostMAC    string   `json:"hostMAC"`
	// EnableDSR is kube-proxy --enable-dsr (winproxy dsr.enabled).
	EnableDSR bool `json:"enableDSR"`
	// SourceVIP is the overlay source VIP (--source-vip). SourceVIPEndpoint
	// names the CNI endpoint holding it (winproxy's Endpoint strategy;
	// upstream is just given its address); empty means winproxy's Static
	// strategy, where the proxy creates the endpoint.
	SourceVIP             string `json:"sourceVIP"`
	SourceVIPEndpoint     string `json:"sourceVIPEndpoint,omitempty"`
	ForwardHealthCheckVIP bool   `json:"forwardHealthCheckVIP"`
	RootEndpointName      string `json:"rootEndpointName"`
	HealthzPort           int    `json:"healthzPort"`
	// Zone is the node's topology.kubernetes.io/zone label, "" for none.
	// winproxy routes by the EndpointSlices' topology hints for it;
	// upstream ignores hints (winkernel's OnTopologyChange is empty).
	Zone string `json:"zone,omitempty"`
	// Endpoints are the local endpoints the CNI (and the host) created
	// before the proxy starts.
	Endpoints []LocalEndpoint `json:"endpoints"`
	Steps     []Step          `json:"steps"`
	// Measure asks both sides for each step's Cost (make bench-upstream);
	// winproxy then leaves out the suite's own checks, which would count.
	Measure bool `json:"measure,omitempty"`
}

// Network is the HNS network the CNI created.
type Network struct {
	ID     string  `json:"id"`
	Name   string  `json:"name"`
	Type   string  `json:"type"`
	Routes []Route `json:"routes"`
}

// Route is an overlay RemoteSubnetRoute policy.
type Route struct {
	Prefix          string `json:"prefix"`
	ProviderAddress string `json:"providerAddress"`
	IsolationID     uint16 `json:"isolationID"`
}

// Features is the HNS feature set (derived from the HNS version on both
// sides).
type Features struct {
	DSR             bool `json:"dsr"`
	SessionAffinity bool `json:"sessionAffinity"`
	IPv6DualStack   bool `json:"ipv6DualStack"`
	Modify          bool `json:"modify"`
}

// LocalEndpoint is an endpoint the CNI or the host created.
type LocalEndpoint struct {
	Name string   `json:"name"`
	IPs  []string `json:"ips"`
	MAC  string   `json:"mac,omitempty"`
}

// Step is what changed since the previous step, then a sync. Objects are
// upserted or deleted by "namespace/name". With Restart the proxy process
// is replaced before the sync, after the changes (they happened while it
// was down).
type Step struct {
	Restart         bool                         `json:"restart,omitempty"`
	AddEndpoints    []LocalEndpoint              `json:"addEndpoints,omitempty"`
	RemoveEndpoints []string                     `json:"removeEndpoints,omitempty"`
	Services        []*corev1.Service            `json:"services,omitempty"`
	DeleteServices  []string                     `json:"deleteServices,omitempty"`
	Slices          []*discoveryv1.EndpointSlice `json:"slices,omitempty"`
	DeleteSlices    []string                     `json:"deleteSlices,omitempty"`
}

// Result is what one side's HNS held after each step.
type Result struct {
	Name  string       `json:"name"`
	Steps []StepResult `json:"steps"`
}

// StepResult is the HNS state after one step. Error is set when the proxy
// could not start or panicked.
type StepResult struct {
	Error         string         `json:"error,omitempty"`
	Endpoints     []Endpoint     `json:"endpoints"`
	LoadBalancers []LoadBalancer `json:"loadBalancers"`
	// Cost is what the step cost the proxy: upstream always reports it,
	// winproxy when measured (make bench-upstream).
	Cost Cost `json:"cost"`
}

// Cost is what one step cost a proxy, from its informer events to the end
// of its sync (upstream: the first step includes the process's start).
type Cost struct {
	// HNSReads and HNSWrites are the calls the proxy made to its HNS
	// interface: upstream's HcnService (hnslib's functions), winproxy's
	// hns.Client.
	HNSReads  int `json:"hnsReads"`
	HNSWrites int `json:"hnsWrites"`
	// HCN is what those calls cost on Windows in HCN calls (JSON RPCs into
	// HNS) as hnslib or hcsshim issue them: a list of N objects 1 + 3N.
	HCN int `json:"hcn"`
	// CPUNanos is the process's CPU time (user and system, every thread,
	// garbage collection included); FakeNanos the wall time inside the
	// fake HNS, which on Windows is HNS's own work.
	CPUNanos  int64  `json:"cpuNanos"`
	FakeNanos int64  `json:"fakeNanos"`
	Allocs    uint64 `json:"allocs"`
	Bytes     uint64 `json:"bytes"`
}

// Endpoint is an HNS endpoint as listed.
type Endpoint struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	IPs             []string `json:"ips"`
	MAC             string   `json:"mac"`
	Remote          bool     `json:"remote"`
	ProviderAddress string   `json:"providerAddress,omitempty"`
}

// LoadBalancer is an HNS load balancer as listed (first port mapping).
type LoadBalancer struct {
	ID           string   `json:"id"`
	VIPs         []string `json:"vips"`
	Protocol     uint32   `json:"protocol"`
	InternalPort uint16   `json:"internalPort"`
	ExternalPort uint16   `json:"externalPort"`
	Distribution uint32   `json:"distribution"`
	PortFlags    uint32   `json:"portFlags"`
	Flags        uint32   `json:"flags"`
	SourceVIP    string   `json:"sourceVIP"`
	Endpoints    []string `json:"endpoints"`
}
