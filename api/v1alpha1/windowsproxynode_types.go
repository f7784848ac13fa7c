package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IPFamily is an IP family a node proxies.
// +kubebuilder:validation:Enum=IPv4;IPv6
type IPFamily string

const (
	// IPv4 is the IPv4 family.
	IPv4 IPFamily = "IPv4"
	// IPv6 is the IPv6 family.
	IPv6 IPFamily = "IPv6"
)

// SourceVIPOrigin says where the source VIP in effect came from.
// +kubebuilder:validation:Enum=Endpoint;Static;Create;None
type SourceVIPOrigin string

const (
	// SourceVIPOriginEndpoint means it was read from the named HNS endpoint.
	SourceVIPOriginEndpoint SourceVIPOrigin = "Endpoint"
	// SourceVIPOriginStatic means it came from the config or the node annotation.
	SourceVIPOriginStatic SourceVIPOrigin = "Static"
	// SourceVIPOriginCreate means the agent reserved it from the pod CIDR and created its endpoint.
	SourceVIPOriginCreate SourceVIPOrigin = "Create"
	// SourceVIPOriginNone means no source VIP is in effect (L2Bridge, or not obtained yet).
	SourceVIPOriginNone SourceVIPOrigin = "None"
)

// ResolvedSourceVIP is the source-VIP strategy with this node's inputs filled in.
type ResolvedSourceVIP struct {
	// strategy is the strategy from the config.
	// +required
	Strategy SourceVIPStrategy `json:"strategy"`

	// endpointName is the HNS endpoint to read (Endpoint strategy).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	EndpointName string `json:"endpointName,omitempty"`

	// address is the source VIP (Static strategy, or Create once the controller computed it from
	// the node's pod CIDR).
	// +optional
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:XValidation:rule="isIP(self) && ip(self).family() == 4",message="sourceVIP.address must be a valid IPv4 address: overlay networks are IPv4 only"
	Address string `json:"address,omitempty"`
}

// ResolvedProxyConfig is a WindowsProxyConfig resolved for one node: feature gates evaluated at
// the node's Kubernetes version, per-node inputs filled in. It is everything the agent needs.
type ResolvedProxyConfig struct {
	// network is the HNS network to program.
	// +required
	Network NetworkSpec `json:"network"`

	// enableDSR is kube-proxy --enable-dsr after the WinDSR gate check: DSR on ClusterIP load
	// balancers.
	// +optional
	EnableDSR bool `json:"enableDSR"`

	// sourceVIP is how this node obtains its source VIP; set when the network may be overlay.
	// +optional
	SourceVIP *ResolvedSourceVIP `json:"sourceVIP,omitempty"`

	// dualStack is true when IPv6 is requested besides IPv4.
	// +optional
	DualStack bool `json:"dualStack"`

	// featureGates are the effective values of the gates the agent reads, at this node's version.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	FeatureGates map[string]bool `json:"featureGates,omitempty"`

	// healthCheck configures health-check load balancers.
	// +optional
	HealthCheck HealthCheckSpec `json:"healthCheck,omitzero"`

	// sync bounds the agent's sync frequency.
	// +optional
	Sync SyncSpec `json:"sync,omitzero"`

	// nodeIPs are the node's internal IPs, at most one per family.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:MaxLength=45
	NodeIPs []string `json:"nodeIPs,omitempty"`

	// podCIDRs are the node's pod CIDRs.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:MaxLength=49
	PodCIDRs []string `json:"podCIDRs,omitempty"`

	// kubernetesVersion is the node's Kubernetes minor version the gates were evaluated at, e.g.
	// "1.33".
	// +optional
	// +kubebuilder:validation:MaxLength=16
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// topologyAwareRouting is the config's topologyAwareRouting (true when unset): the node
	// honours EndpointSlice topology hints. Hints for a node (PreferSameNode) also need the
	// PreferSameTrafficDistribution gate in effect at the node's version, as in kube-proxy.
	// +optional
	TopologyAwareRouting bool `json:"topologyAwareRouting"`
}

// WindowsProxyNodeSpec is written by the controller only.
type WindowsProxyNodeSpec struct {
	// configName is the WindowsProxyConfig this node belongs to.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ConfigName string `json:"configName"`

	// hash identifies the content of proxy; the agent reports it back in status.observedHash once
	// it programmed it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Hash string `json:"hash"`

	// proxy is the resolved configuration for this node.
	// +required
	Proxy ResolvedProxyConfig `json:"proxy"`
}

// NetworkStatus is the HNS network the agent found.
type NetworkStatus struct {
	// name is the HNS network name.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name,omitempty"`
	// id is the HNS network ID; a new ID means the CNI recreated the network.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ID string `json:"id,omitempty"`
	// type is the network type HNS reports (L2Bridge, Overlay, ...).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Type string `json:"type,omitempty"`
}

// SourceVIPStatus is the source VIP in effect.
type SourceVIPStatus struct {
	// address is the source VIP; empty on L2Bridge, where HNS picks the address.
	// +optional
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="self == '' || isIP(self)",message="sourceVIP.address must be an IP address"
	Address string `json:"address,omitempty"`
	// origin says where the address came from.
	// +optional
	Origin SourceVIPOrigin `json:"origin,omitempty"`
}

// DSRStatus compares DSR as requested with DSR in effect.
type DSRStatus struct {
	// requested is true when the resolved config enables DSR.
	// +optional
	Requested bool `json:"requested"`
	// active is true when ClusterIP load balancers carry the DSR flag.
	// +optional
	Active bool `json:"active"`
}

// HNSStatus describes the host's HNS.
type HNSStatus struct {
	// version is the HNS version, "major.minor".
	// +optional
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^[0-9]+\.[0-9]+$`
	Version string `json:"version,omitempty"`
	// capabilities are the HNS features the agent relies on that this version has, e.g. DSR,
	// IPv6DualStack, SessionAffinity, ModifyLoadBalancer, RemoteSubnet.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=32
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9]+$`
	Capabilities []string `json:"capabilities,omitempty"`
	// windowsBuild is the Windows build number, e.g. "20348".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)*$`
	WindowsBuild string `json:"windowsBuild,omitempty"`
}

// HealthCheckStatus says where the node answers the health checks of cloud load balancers, as
// kube-proxy does on the nodes it runs on.
type HealthCheckStatus struct {
	// proxyAddress is where the proxy health server (/healthz, /livez) listens, e.g. ":10256" for
	// every address of the node; empty when it does not listen.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ProxyAddress string `json:"proxyAddress,omitempty"`
	// serviceHealthServers is how many service health servers listen, one per Service with a
	// healthCheckNodePort (type LoadBalancer, externalTrafficPolicy: Local).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	ServiceHealthServers int32 `json:"serviceHealthServers,omitempty"`
}

// LoadBalancerCounts counts HNS load balancers.
type LoadBalancerCounts struct {
	// desired is how many load balancers the node should have.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Desired int32 `json:"desired"`
	// programmed is how many of them are programmed.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Programmed int32 `json:"programmed"`
	// failed is how many could not be programmed in the last sync.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Failed int32 `json:"failed"`
}

// WindowsProxyNodeStatus is written by the node's agent only.
type WindowsProxyNodeStatus struct {
	// conditions are Programmed, NetworkReady, SourceVIPReady, DSRActive, DualStackDowngraded,
	// HealthCheckServing and Degraded, written by the agent; AgentAlive, written by the
	// controller from the agent's heartbeat; and the kstatus summary of them all, Ready,
	// Reconciling and Stalled. A condition about what is in effect is Unknown while nothing is
	// programmed (e.g. the network is missing) or while the agent is silent.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation of the spec the conditions describe. It defaults to
	// 0, so a WindowsProxyNode its agent has not reported on yet reads as in progress, not as
	// current, to kstatus.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration"`

	// observedHash is the spec.hash the agent last acted on.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ObservedHash string `json:"observedHash,omitempty"`

	// programmedHash is the last spec.hash the agent programmed completely (Programmed=True). It
	// stays when a later sync of the same hash fails, so the controller can tell a lapse after a
	// finished rollout (the CNI recreating the network, say) from a node that never took the new
	// config, without writing anything itself.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ProgrammedHash string `json:"programmedHash,omitempty"`

	// network is the HNS network found.
	// +optional
	Network NetworkStatus `json:"network,omitzero"`

	// sourceVIP is the source VIP in effect.
	// +optional
	SourceVIP SourceVIPStatus `json:"sourceVIP,omitzero"`

	// dsr compares DSR requested and in effect.
	// +optional
	DSR DSRStatus `json:"dsr,omitzero"`

	// ipFamilies are the families the node really proxies.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=2
	IPFamilies []IPFamily `json:"ipFamilies,omitempty"`

	// ipFamiliesText is ipFamilies joined by commas ("IPv4,IPv6"), for kubectl get, whose columns
	// can only show a list as JSON.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	IPFamiliesText string `json:"ipFamiliesText,omitempty"`

	// hns describes the host's HNS.
	// +optional
	HNS HNSStatus `json:"hns,omitzero"`

	// loadBalancers counts the HNS load balancers.
	// +optional
	LoadBalancers LoadBalancerCounts `json:"loadBalancers,omitzero"`

	// remoteEndpoints is the number of remote HNS endpoints the agent owns.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	RemoteEndpoints int32 `json:"remoteEndpoints,omitempty"`

	// topologyRoutedServices is the number of Services whose load balancers on this node follow
	// EndpointSlice topology hints (same zone or same node) rather than spreading over every
	// endpoint. A Service with hints that this node cannot use (no hint for its zone, an endpoint
	// without a hint, no zone label) is not counted: like kube-proxy, the node uses every
	// endpoint.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	TopologyRoutedServices int32 `json:"topologyRoutedServices,omitempty"`

	// healthCheck says where the node answers the health checks of cloud load balancers.
	// +optional
	HealthCheck HealthCheckStatus `json:"healthCheck,omitzero"`

	// lastSyncTime is when the last sync finished.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`

	// lastSyncDurationMilliseconds is how long the last sync took.
	// +optional
	// +kubebuilder:validation:Minimum=0
	LastSyncDurationMilliseconds int64 `json:"lastSyncDurationMilliseconds,omitempty"`

	// agentVersion is the agent's version.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	AgentVersion string `json:"agentVersion,omitempty"`
}

// WindowsProxyNode is one Windows node's resolved proxy configuration (spec, from the controller)
// and what its agent really programmed into HNS (status). It is named after the node and owned by
// its WindowsProxyConfig.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=wpn,categories=winproxy
// +kubebuilder:printcolumn:name="Config",type=string,JSONPath=".spec.configName"
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=".status.network.type"
// +kubebuilder:printcolumn:name="Source-VIP",type=string,JSONPath=".status.sourceVIP.address"
// +kubebuilder:printcolumn:name="DSR",type=boolean,JSONPath=".status.dsr.active"
// +kubebuilder:printcolumn:name="LBs",type=integer,JSONPath=".status.loadBalancers.programmed"
// +kubebuilder:printcolumn:name="Programmed",type=string,JSONPath=".status.conditions[?(@.type=='Programmed')].status"
// +kubebuilder:printcolumn:name="Downgraded",type=string,JSONPath=".status.conditions[?(@.type=='DualStackDowngraded')].status"
// +kubebuilder:printcolumn:name="Alive",type=string,JSONPath=".status.conditions[?(@.type=='AgentAlive')].status"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="HNS",type=string,JSONPath=".status.hns.version",priority=1
// +kubebuilder:printcolumn:name="Families",type=string,JSONPath=".status.ipFamiliesText",priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].message",priority=1
type WindowsProxyNode struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata; the name is the node's name.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec is the resolved config, written by the controller.
	// +required
	Spec WindowsProxyNodeSpec `json:"spec"`

	// status is what the agent programmed, written by the agent (AgentAlive by the controller).
	// The default gives a new WindowsProxyNode status.observedGeneration 0 before anyone writes.
	// +optional
	// +kubebuilder:default={}
	Status WindowsProxyNodeStatus `json:"status,omitzero"`
}

// WindowsProxyNodeList is a list of WindowsProxyNode.
// +kubebuilder:object:root=true
type WindowsProxyNodeList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitzero"`
	// items are the nodes.
	Items []WindowsProxyNode `json:"items"`
}
