package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// NetworkType is the kind of HNS network the Windows nodes use for pods.
// +kubebuilder:validation:Enum=Auto;L2Bridge;Overlay
type NetworkType string

const (
	// NetworkTypeAuto lets each node's agent use whatever type its HNS network has; an overlay
	// network found this way still needs overlay.sourceVIP.
	NetworkTypeAuto NetworkType = "Auto"
	// NetworkTypeL2Bridge is a bridged network (Flannel host-gw, Calico BGP, Azure CNI). Load
	// balancers never carry a source VIP on it.
	NetworkTypeL2Bridge NetworkType = "L2Bridge"
	// NetworkTypeOverlay is a VXLAN network (Flannel vxlan, Calico VXLAN). It needs a source VIP
	// per node and supports IPv4 only.
	NetworkTypeOverlay NetworkType = "Overlay"
)

// SourceVIPStrategy says how a node's overlay source VIP is obtained.
// +kubebuilder:validation:Enum=Endpoint;Static;Create
type SourceVIPStrategy string

const (
	// SourceVIPStrategyEndpoint reads the IP of an HNS endpoint that the CNI created, found by name
	// (Calico creates "Calico_ep").
	SourceVIPStrategyEndpoint SourceVIPStrategy = "Endpoint"
	// SourceVIPStrategyStatic takes a fixed address per node, from spec.overlay.sourceVIP.static.
	SourceVIPStrategyStatic SourceVIPStrategy = "Static"
	// SourceVIPStrategyCreate makes the agent create a local HNS endpoint with an address reserved
	// from the node's pod CIDR (what Flannel's start script does with host-local IPAM).
	SourceVIPStrategyCreate SourceVIPStrategy = "Create"
)

// Well-known node annotation and label keys.
const (
	// SourceVIPAnnotation is the default node annotation that holds a node's source VIP for the
	// Static strategy.
	SourceVIPAnnotation = "winproxy.io/source-vip"
	// OSLabel is the node label every selected node must carry with value "windows".
	OSLabel = "kubernetes.io/os"
)

// WindowsProxyConfigSpec is what a cluster admin declares for a set of Windows nodes.
// +kubebuilder:validation:XValidation:rule="self.network.type != 'Overlay' || (has(self.overlay) && has(self.overlay.sourceVIP))",message="overlay.sourceVIP is required when network.type is Overlay: every overlay node needs a source VIP (kube-proxy --source-vip)"
// +kubebuilder:validation:XValidation:rule="self.network.type != 'L2Bridge' || !has(self.overlay)",message="overlay must not be set when network.type is L2Bridge: L2Bridge load balancers never use a source VIP"
// +kubebuilder:validation:XValidation:rule="!(self.network.type == 'Overlay' && has(self.featureGates) && 'WinOverlay' in self.featureGates && !self.featureGates['WinOverlay'])",message="featureGates.WinOverlay cannot be false when network.type is Overlay"
// +kubebuilder:validation:XValidation:rule="!(self.dsr.enabled && has(self.featureGates) && 'WinDSR' in self.featureGates && !self.featureGates['WinDSR'])",message="featureGates.WinDSR cannot be false when dsr.enabled is true"
type WindowsProxyConfigSpec struct {
	// nodeSelector selects the Windows nodes this config applies to. Nodes must also carry
	// kubernetes.io/os=windows: a Linux node is never selected, whatever this says. Empty or
	// omitted selects every Windows node. A node selected by two configs belongs to the older one.
	// +optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`

	// network names the HNS network that carries the pods and the type it is expected to have.
	// +required
	Network NetworkSpec `json:"network"`

	// dsr configures Direct Server Return on ClusterIP load balancers.
	// +optional
	// +kubebuilder:default={}
	DSR DSRSpec `json:"dsr,omitzero"`

	// overlay configures what overlay (VXLAN) networks need: the source VIP of each node.
	// Required when network.type is Overlay; forbidden when it is L2Bridge.
	// +optional
	Overlay *OverlaySpec `json:"overlay,omitempty"`

	// dualStack asks for IPv6 service proxying besides IPv4. Hosts whose network is overlay, or
	// whose HNS is older than 11.10, program IPv4 only and report DualStackDowngraded=True.
	// +optional
	// +kubebuilder:default={}
	DualStack DualStackSpec `json:"dualStack,omitzero"`

	// featureGates maps kube-proxy feature gate names to values (kube-proxy --feature-gates).
	// They are checked against each node's Kubernetes version: a gate unknown at that version, or a
	// locked gate set to a non-default value (WinDSR or WinOverlay set to false on 1.34 and later),
	// keeps that node on its last good config and is reported in status. On 1.34 and later the
	// safest choice is to leave WinDSR and WinOverlay out.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 64 && k.matches('^[A-Z][A-Za-z0-9]*$'))",message="featureGates keys must be feature gate names such as WinDSR: an upper-case letter followed by letters and digits, at most 64 characters"
	FeatureGates map[string]bool `json:"featureGates,omitempty"`

	// healthCheck configures the health-check load balancers of LoadBalancer services.
	// +optional
	// +kubebuilder:default={}
	HealthCheck HealthCheckSpec `json:"healthCheck,omitzero"`

	// sync bounds how often each agent reprograms HNS.
	// +optional
	// +kubebuilder:default={}
	Sync SyncSpec `json:"sync,omitzero"`

	// rollout paces how a change of this config reaches the selected nodes.
	// +optional
	// +kubebuilder:default={}
	Rollout RolloutSpec `json:"rollout,omitzero"`

	// topologyAwareRouting makes each node honour the topology hints of EndpointSlices, as
	// kube-proxy does on Linux nodes and winkernel does not: the hints the EndpointSlice
	// controller writes for a Service's trafficDistribution (PreferSameZone, PreferClose,
	// PreferSameNode) or its service.kubernetes.io/topology-mode: Auto annotation. A node then
	// sends the traffic of the Service's cluster-wide load balancers (ClusterIP, and node-port,
	// external-IP and ingress ones under externalTrafficPolicy: Cluster) to the endpoints hinted
	// for its zone (its topology.kubernetes.io/zone label) or for itself, and falls back to every
	// endpoint exactly when kube-proxy does. Services without hints are not affected. False
	// programs what winkernel programs. Default true: hints exist only when a Service asks for
	// them, and then Windows nodes route as the Linux nodes of the same cluster.
	// +optional
	// +kubebuilder:default=true
	TopologyAwareRouting *bool `json:"topologyAwareRouting,omitempty"`
}

// NetworkSpec names the HNS network the agent programs.
type NetworkSpec struct {
	// name is the HNS network name (kube-proxy --network-name, or the KUBE_NETWORK environment
	// variable), e.g. "Calico" for Calico, "vxlan0" or "cbr0" for Flannel.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name"`

	// type is the network type the admin expects: Auto, L2Bridge or Overlay. Each agent reports the
	// type it really found; a node whose network has another type is reported, not reprogrammed.
	// +optional
	// +kubebuilder:default=Auto
	Type NetworkType `json:"type,omitempty"`
}

// DSRSpec configures Direct Server Return.
type DSRSpec struct {
	// enabled turns on DSR for ClusterIP load balancers (kube-proxy --enable-dsr). It needs the
	// WinDSR feature gate in effect (explicitly true on nodes older than 1.33) and an HNS with DSR
	// support (Windows Server 2019 with the May 2020 update or later). externalTrafficPolicy: Local
	// services get DSR on their external load balancers whether or not this is set.
	// +optional
	// +kubebuilder:default=false
	Enabled bool `json:"enabled"`
}

// OverlaySpec configures what overlay networks need.
type OverlaySpec struct {
	// sourceVIP says how each node obtains its source VIP, the address overlay load balancers use to
	// SNAT proxied traffic (kube-proxy --source-vip).
	// +required
	SourceVIP SourceVIPSpec `json:"sourceVIP"`
}

// SourceVIPSpec is a union: strategy names the one member that must be set.
// +kubebuilder:validation:XValidation:rule="self.strategy == 'Endpoint' ? has(self.endpoint) : !has(self.endpoint)",message="sourceVIP.endpoint is required when strategy is Endpoint and forbidden otherwise"
// +kubebuilder:validation:XValidation:rule="self.strategy == 'Static' ? has(self.static) : !has(self.static)",message="sourceVIP.static is required when strategy is Static and forbidden otherwise"
// +kubebuilder:validation:XValidation:rule="self.strategy == 'Create' || !has(self.create)",message="sourceVIP.create is only allowed when strategy is Create"
type SourceVIPSpec struct {
	// strategy is how the source VIP is obtained: Endpoint (the IP of a named HNS endpoint the CNI
	// made, e.g. Calico's Calico_ep), Static (an address per node, from a node annotation or a list
	// here) or Create (the agent creates a local HNS endpoint with an address reserved from the
	// node's pod CIDR, as Flannel's start script does).
	// +required
	Strategy SourceVIPStrategy `json:"strategy"`

	// endpoint configures the Endpoint strategy.
	// +optional
	Endpoint *SourceVIPEndpoint `json:"endpoint,omitempty"`

	// static configures the Static strategy.
	// +optional
	Static *SourceVIPStatic `json:"static,omitempty"`

	// create configures the Create strategy; defaults apply when it is omitted.
	// +optional
	Create *SourceVIPCreate `json:"create,omitempty"`
}

// SourceVIPEndpoint reads the source VIP from an existing HNS endpoint.
type SourceVIPEndpoint struct {
	// name is the HNS endpoint whose IPv4 address is the source VIP, e.g. "Calico_ep". The agent
	// waits (SourceVIPReady=False) until the CNI has created it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name"`
}

// SourceVIPStatic gives each node a fixed source VIP.
type SourceVIPStatic struct {
	// nodeAnnotation is the node annotation holding the node's source VIP (an IPv4 address), used
	// for nodes not listed in addresses.
	// +optional
	// +kubebuilder:default="winproxy.io/source-vip"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	NodeAnnotation string `json:"nodeAnnotation,omitempty"`

	// addresses lists source VIPs by node name; an entry here wins over the node annotation.
	// +optional
	// +listType=map
	// +listMapKey=nodeName
	// +kubebuilder:validation:MaxItems=1000
	Addresses []NodeAddress `json:"addresses,omitempty"`
}

// NodeAddress is one node's source VIP.
type NodeAddress struct {
	// nodeName is the name of the Node.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	NodeName string `json:"nodeName"`

	// address is the node's source VIP: a unicast IPv4 address inside its pod CIDR that the CNI's
	// IPAM never hands out. 0.0.0.0, 255.255.255.255, loopback (127.0.0.0/8), multicast
	// (224.0.0.0/4) and link-local (169.254.0.0/16) addresses are refused: HNS cannot SNAT to them.
	// +required
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:XValidation:rule="isIP(self) && ip(self).family() == 4",message="address must be a valid IPv4 address: overlay networks are IPv4 only"
	// +kubebuilder:validation:XValidation:rule="!isIP(self) || ip(self).isGlobalUnicast()",message="address must be a unicast address a pod could have: not 0.0.0.0, 255.255.255.255, loopback (127.0.0.0/8), multicast (224.0.0.0/4) or link-local (169.254.0.0/16)"
	Address string `json:"address"`
}

// SourceVIPCreate reserves the source VIP from the node's pod CIDR.
type SourceVIPCreate struct {
	// offsetFromEnd picks the address counted back from the end of the node's IPv4 pod CIDR: 1 is
	// the last usable address (10.244.1.254 in 10.244.1.0/24). Keep it out of the CNI's IPAM range
	// (k/k #100962); the agent refuses an address another HNS endpoint already holds.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65534
	OffsetFromEnd int32 `json:"offsetFromEnd,omitempty"`
}

// DualStackSpec configures IPv6 service proxying.
type DualStackSpec struct {
	// enabled asks for IPv6 load balancers besides IPv4 (kube-proxy programs both families on
	// dual-stack capable hosts). Overlay networks and HNS older than 11.10 fall back to IPv4 and
	// report DualStackDowngraded=True with the reason.
	// +optional
	// +kubebuilder:default=false
	Enabled bool `json:"enabled"`
}

// HealthCheckSpec configures health-check load balancers.
type HealthCheckSpec struct {
	// forwardVIP creates, for each load-balancer ingress IP, a health-check load balancer that
	// forwards the health-check port to the host (kube-proxy --forward-healthcheck-vip).
	// +optional
	// +kubebuilder:default=false
	ForwardVIP bool `json:"forwardVIP"`

	// rootEndpointName is the host's HNS endpoint that health-check load balancers forward to
	// (kube-proxy --root-hnsendpoint-name). Without such an endpoint no health-check load
	// balancer is created.
	// +optional
	// +kubebuilder:default=cbr0
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	RootEndpointName string `json:"rootEndpointName,omitempty"`

	// port is the health-check port used for services without a healthCheckNodePort (the port of
	// kube-proxy --healthz-bind-address). The ports the node already uses are refused: 10250
	// (kubelet), 10249 (kube-proxy metrics), 10265 and 10266 (the agent's default metrics and
	// probe ports).
	// +optional
	// +kubebuilder:default=10256
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:validation:XValidation:rule="!(self in [10249, 10250, 10265, 10266])",message="healthCheck.port must not be a port the node already uses: 10250 (kubelet), 10249 (kube-proxy metrics), 10265 or 10266 (winproxy-agent metrics and probes)"
	Port int32 `json:"port,omitempty"`
}

// SyncSpec bounds the agent's sync frequency.
// +kubebuilder:validation:XValidation:rule="!has(self.minPeriodSeconds) || !has(self.periodSeconds) || self.minPeriodSeconds <= self.periodSeconds",message="sync.minPeriodSeconds must not be greater than sync.periodSeconds"
type SyncSpec struct {
	// periodSeconds is the longest time between two syncs; a periodic sync that finds nothing
	// changed makes no HNS writes (kube-proxy --iptables-sync-period, used by kernelspace mode).
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	PeriodSeconds int32 `json:"periodSeconds,omitempty"`

	// minPeriodSeconds is the shortest time between two syncs: a burst of changes inside it gives
	// one sync (kube-proxy --iptables-min-sync-period).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	MinPeriodSeconds int32 `json:"minPeriodSeconds"`
}

// RolloutSpec paces a config change across nodes.
type RolloutSpec struct {
	// maxUnavailable is how many nodes may be moving to a new config at once: a number from 1 to
	// 2147483647 or a percentage of the selected nodes ("25%", rounded up, at least one node).
	// The next batch starts when the previous one reports Programmed.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 && self <= 2147483647 : self.matches('^(100|[1-9][0-9]?)%$')",message="rollout.maxUnavailable must be a number from 1 to 2147483647 or a percentage from 1% to 100%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// paused freezes the rollout: nodes keep the config they have until it is unpaused.
	// +optional
	// +kubebuilder:default=false
	Paused bool `json:"paused"`

	// progressDeadlineSeconds is how long a node may take to report Programmed for a new config
	// before the rollout stalls (Progressing=False, reason RolloutStalled).
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=86400
	ProgressDeadlineSeconds int32 `json:"progressDeadlineSeconds,omitempty"`

	// autoRollback undoes a config change that breaks nodes. While a new config is rolled out,
	// a node that got it and does not program it within progressDeadlineSeconds, or programs it
	// and then reports Degraded for progressDeadlineSeconds, fails it: the controller then moves
	// every node back to status.lastGood, the last config every node programmed, at the pace of
	// maxUnavailable, and reports RolledBack=True and Stalled=True (not Ready). The failed config
	// is not rolled out again until the spec changes outside nodeSelector and rollout; paused
	// pauses the rollback too, and setting autoRollback to false rolls the spec out again.
	// Off by default: it reverts nodes that work on the evidence of the few that got the change
	// first, a failure can be the node's (HNS restarting, a CNI recreating its network) rather
	// than the config's, and afterwards the cluster runs something other than the spec says.
	// Without it a failing node stalls the rollout, which already limits a bad change to
	// maxUnavailable nodes, and a person decides.
	// +optional
	// +kubebuilder:default=false
	AutoRollback bool `json:"autoRollback"`
}

// NodeCounts counts the selected nodes by state. Every count is bounded like the int32 it is
// decoded into: an out-of-range value would make the object unreadable for every client.
type NodeCounts struct {
	// selected is the number of Windows nodes this config owns.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Selected int32 `json:"selected"`
	// updated is the number of nodes whose WindowsProxyNode carries the current config (during a
	// rollback, the last good one, status.lastGood).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Updated int32 `json:"updated"`
	// programmed is the number of nodes that report Programmed for the current config (during a
	// rollback, the last good one).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Programmed int32 `json:"programmed"`
	// degraded is the number of nodes that report Degraded or could not be resolved.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Degraded int32 `json:"degraded"`
	// dualStackDowngraded is the number of nodes that fell back from dual-stack to IPv4.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	DualStackDowngraded int32 `json:"dualStackDowngraded"`
	// unreachable is the number of nodes whose agent stopped renewing its heartbeat (their
	// WindowsProxyNode has AgentAlive=False); they also count as degraded.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Unreachable int32 `json:"unreachable"`
}

// NodeProblem names one failing node.
type NodeProblem struct {
	// name is the node's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// reason is a CamelCase word saying what failed, e.g. FeatureGateLocked or NodeDegraded.
	// +required
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	Reason string `json:"reason"`
	// message says what failed and what to do about it.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// WindowsProxyConfigStatus is the aggregated state of the selected nodes.
type WindowsProxyConfigStatus struct {
	// conditions are Accepted, Ready, Reconciling, Stalled, Progressing, Degraded,
	// DualStackDowngraded, Conflicted and RolledBack. Ready is True when every node the config manages
	// programmed its current generation (or no Windows node matches the selector); a config
	// whose nodes all belong to older configs manages nothing and is not Ready. Reconciling and
	// Stalled are kstatus's abnormal-true conditions: at most one of Ready, Reconciling and
	// Stalled is True.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the controller last reconciled successfully.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// nodes counts the selected nodes by state.
	// +optional
	Nodes NodeCounts `json:"nodes"`

	// failingNodes lists up to 10 nodes that fail, with why.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=10
	FailingNodes []NodeProblem `json:"failingNodes,omitempty"`

	// conflictingNodes lists up to 10 nodes this config selects that belong to an older config.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MaxLength=253
	ConflictingNodes []string `json:"conflictingNodes,omitempty"`

	// lastGood is the last spec that every node able to use it programmed, the config
	// spec.rollout.autoRollback returns to. It is kept here, not in the controller's memory, so
	// that a restarted controller finds it. It leaves out the nodeSelector, so its size is
	// bounded (a few hundred kilobytes with 1000 static source VIPs, a few hundred bytes
	// usually).
	// +optional
	LastGood *LastGoodConfig `json:"lastGood,omitempty"`

	// rollback is set while the current spec is rolled back (RolledBack=True): which config
	// failed, when, and on which nodes.
	// +optional
	Rollback *RollbackStatus `json:"rollback,omitempty"`
}

// LastGoodConfig is a spec every node able to use it programmed.
type LastGoodConfig struct {
	// generation is the config's metadata.generation when it had this spec.
	// +required
	// +kubebuilder:validation:Minimum=1
	Generation int64 `json:"generation"`

	// spec is the config's spec at that generation without its nodeSelector; copying it back into
	// spec (keeping today's nodeSelector) makes a rollback permanent. Only what the nodes run is
	// read from it, not its rollout.
	// +required
	Spec WindowsProxyConfigSpec `json:"spec"`
}

// RollbackStatus says what the controller rolled back, and why.
type RollbackStatus struct {
	// generation is the generation whose rollout failed.
	// +required
	// +kubebuilder:validation:Minimum=1
	Generation int64 `json:"generation"`

	// configHash identifies the failed config: a hash of the spec without nodeSelector and
	// rollout. The rollback holds while the spec's hash is this one.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	ConfigHash string `json:"configHash"`

	// startTime is when the controller decided to roll back.
	// +required
	StartTime metav1.Time `json:"startTime"`

	// failedNodes are the nodes that failed the config, with why (up to 10).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=10
	FailedNodes []NodeProblem `json:"failedNodes,omitempty"`
}

// WindowsProxyConfig declares how Windows nodes proxy Services: DSR, the overlay network and its
// source VIPs, dual-stack and feature gates. The controller resolves it per node into a
// WindowsProxyNode and rolls it out; each node's agent programs HNS and reports back.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=wpc,categories=winproxy
// +kubebuilder:printcolumn:name="DSR",type=boolean,JSONPath=".spec.dsr.enabled"
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=".spec.network.type"
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=".status.nodes.selected"
// +kubebuilder:printcolumn:name="Programmed",type=integer,JSONPath=".status.nodes.programmed"
// +kubebuilder:printcolumn:name="Downgraded",type=integer,JSONPath=".status.nodes.dualStackDowngraded"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Unreachable",type=integer,JSONPath=".status.nodes.unreachable",priority=1
// +kubebuilder:printcolumn:name="Source-VIP",type=string,JSONPath=".spec.overlay.sourceVIP.strategy",priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].message",priority=1
type WindowsProxyConfig struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec is the desired proxy configuration.
	// +required
	Spec WindowsProxyConfigSpec `json:"spec"`

	// status is the aggregated state of the selected nodes, written by the controller.
	// +optional
	Status WindowsProxyConfigStatus `json:"status,omitzero"`
}

// WindowsProxyConfigList is a list of WindowsProxyConfig.
// +kubebuilder:object:root=true
type WindowsProxyConfigList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitzero"`
	// items are the configs.
	Items []WindowsProxyConfig `json:"items"`
}
