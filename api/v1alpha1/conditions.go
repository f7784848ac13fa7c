package v1alpha1

//go:generate go run ../../hack/docgen -readme ../../README.md

// Every condition type and reason is documented here, and README.md's condition and reason tables
// are generated from these comments (go generate ./api/...), so follow the format:
//   - a const block's doc says, on a "+docgen:" line, where its constants appear:
//     "+docgen:conditions=<kinds>" for condition types, "+docgen:reasons=<kinds>" for reasons,
//     where kinds are WindowsProxyConfig, WindowsProxyNode or failingNodes (the per-node problems
//     in WindowsProxyConfig.status.failingNodes); a constant's own "+docgen:" line overrides it;
//   - a condition type's comment reads "ConditionX is True when ...";
//   - a reason's comment reads "ReasonX (Type=Status, ...): what it means", naming each condition
//     that carries it, or "ReasonX: what it means" for failingNodes.

// The kstatus summary both kinds carry. Ready is what `kubectl wait --for=condition=Ready`
// reads; Reconciling and Stalled follow the kstatus conventions (abnormal-true), so kstatus, Flux,
// Argo CD and `helm --wait` read a config or a node as Current (Ready), InProgress
// (Reconciling=True) or Failed (Stalled=True). At most one of the three is True. On a
// WindowsProxyNode they summarise the other conditions (internal/nodesummary): the agent writes
// them with its report, the controller when the agent's heartbeat stops or returns.
//
// +docgen:conditions=WindowsProxyConfig,WindowsProxyNode
const (
	// ConditionReady is True when what is programmed is what was asked for. On a config: it
	// manages what it selects and every node it manages runs the current generation and reports
	// Programmed; also True when no Windows node matches the selector at all. False when some node
	// is not programmed yet, or when every node the selector matches belongs to an older config
	// (AllNodesClaimed): such a config manages nothing. On a node: its agent is alive and
	// programmed the current spec; Unknown while the agent is silent.
	ConditionReady = "Ready"
	// ConditionReconciling is True while what is asked for is expected to happen without anyone's
	// help: on a config, a rollout under way or paused, or nodes about to report Programmed; on a
	// node, the agent has not acted on the current spec yet, is catching up with changes, or is
	// waiting for its network (kstatus InProgress). False when Ready or Stalled.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when Ready cannot come without a change by a person (kstatus
	// Failed). On a config: a node refused the config or failed, the rollout stalled or was rolled
	// back, the spec or its selector cannot be used, or every selected node belongs to an older
	// config. On a node: the agent refused the config or failed (Degraded), the network is missing
	// or of the wrong type, or the agent's heartbeat stopped (AgentAlive=False).
	ConditionStalled = "Stalled"
)

// Condition types of WindowsProxyConfig.
//
// +docgen:conditions=WindowsProxyConfig
const (
	// ConditionAccepted is True when the spec is valid and resolvable on at least one node it
	// manages; False (e.g. InvalidFeatureGates) means nothing new is rolled out.
	ConditionAccepted = "Accepted"
	// ConditionProgressing is True while a rollout (or a rollback) is under way; False once it is
	// complete, or with RolloutStalled when a node failed it.
	ConditionProgressing = "Progressing"
	// ConditionConflicted is True when another, older config also selects some of these nodes.
	ConditionConflicted = "Conflicted"
	// ConditionRolledBack is True when spec.rollout.autoRollback undid the current spec: nodes
	// failed it, and every node that got it is being moved, or was moved, back to status.lastGood.
	// The spec is not rolled out again until it changes outside nodeSelector and rollout.
	ConditionRolledBack = "RolledBack"
)

// Condition types of WindowsProxyNode, written by the agent.
//
// +docgen:conditions=WindowsProxyNode
const (
	// ConditionProgrammed is True when HNS holds every desired load balancer for observedHash.
	ConditionProgrammed = "Programmed"
	// ConditionNetworkReady is True when the HNS network was found with the expected type.
	ConditionNetworkReady = "NetworkReady"
	// ConditionSourceVIPReady is True when the overlay source VIP is known and its HNS endpoint
	// exists (True with reason NotRequired on L2Bridge).
	ConditionSourceVIPReady = "SourceVIPReady"
	// ConditionDSRActive is True when ClusterIP load balancers carry the DSR flag.
	ConditionDSRActive = "DSRActive"
	// ConditionHealthCheckServing is True when the node answers load balancers' health checks as
	// kube-proxy would: the proxy health server (/healthz, /livez) and one service health server
	// per healthCheckNodePort listen.
	ConditionHealthCheckServing = "HealthCheckServing"
	// ConditionAgentAlive is True while the node's agent renews its heartbeat (a Lease named after
	// the node, in the agent's namespace) with a healthy sync loop. The controller writes it:
	// False when the Lease is older than --node-grace-period, never appeared, or says the sync
	// loop is stuck; Programmed and Ready are then Unknown, since nobody vouches for them.
	ConditionAgentAlive = "AgentAlive"
)

// Condition types of WindowsProxyNode about the agent's own records on the node.
//
// +docgen:conditions=WindowsProxyNode
const (
	// ConditionOwnershipRecorded is True when the agent's ownership ledger (the file on the node
	// that proves which HNS load balancers it created) holds everything the agent knows. False
	// while it cannot be written, e.g. on a full disk: HNS is programmed as usual and the agent
	// keeps the changes in memory until the disk has room.
	ConditionOwnershipRecorded = "OwnershipRecorded"
)

// Reasons of OwnershipRecorded.
//
// +docgen:reasons=WindowsProxyNode
const (
	// ReasonLedgerWritten (OwnershipRecorded=True): every change is written to the ledger, with
	// space reserved ahead for the next ones.
	ReasonLedgerWritten = "LedgerWritten"
	// ReasonLedgerSpaceLow (OwnershipRecorded=True): every change is written, but the disk
	// holding the ledger is full: it could not reserve space ahead, so later writes may fail.
	ReasonLedgerSpaceLow = "LedgerSpaceLow"
	// ReasonLedgerNotWritable (OwnershipRecorded=False, Programmed=False, Degraded=True): a write to the ledger failed (e.g. no
	// space left on device): the agent programs HNS as usual and keeps the changes in memory
	// until a write works again. A restart before then recognises the load balancers that match
	// the cluster, and not those of Services deleted meanwhile. At start, when the ledger cannot
	// be opened at all, it is also the reason of Programmed=False and Degraded=True: the agent
	// exits and programs nothing.
	ReasonLedgerNotWritable = "LedgerNotWritable"
)

// Condition types both kinds have.
//
// +docgen:conditions=WindowsProxyConfig,WindowsProxyNode
const (
	// ConditionDegraded is True when something failed: on a config, at least one node refused it,
	// failed to program it or lost its state; on a node, the last sync left load balancers
	// unprogrammed or stopped on an HNS error.
	ConditionDegraded = "Degraded"
	// ConditionDualStackDowngraded is True when dual-stack was asked for and only IPv4 is proxied:
	// on a config, by at least one node.
	ConditionDualStackDowngraded = "DualStackDowngraded"
)

// Reasons of WindowsProxyConfig conditions.
//
// +docgen:reasons=WindowsProxyConfig
const (
	// ReasonValid (Accepted=True): the spec resolved on every selected node.
	ReasonValid = "Valid"
	// ReasonInvalidFeatureGates (Accepted=False, Reconciling=False, Stalled=True): the feature
	// gates are wrong on every selected node; each node keeps its last good config.
	ReasonInvalidFeatureGates = "InvalidFeatureGates"
	// ReasonPartiallyResolved (Accepted=True): the spec resolved on some selected nodes only; the
	// others keep their last good config and are listed in status.failingNodes.
	ReasonPartiallyResolved = "PartiallyResolved"
	// ReasonNodesUnresolvable (Accepted=False, Reconciling=False, Stalled=True): the spec cannot be
	// resolved on any selected node, for reasons other than feature gates alone (e.g. no node has
	// a usable source VIP).
	ReasonNodesUnresolvable = "NodesUnresolvable"
	// ReasonInvalidNodeSelector (Accepted=False, Ready=False, Reconciling=False, Stalled=True,
	// Progressing=False): spec.nodeSelector cannot be parsed; the config keeps the nodes it holds,
	// unchanged, and selects no other.
	ReasonInvalidNodeSelector = "InvalidNodeSelector"
	// ReasonInvalidSpec (Accepted=False, Ready=False, Reconciling=False, Stalled=True): the
	// controller cannot read the spec, e.g. a value stored before the CRD bounded it; the config
	// keeps the nodes it holds, unchanged, and selects no other until the spec is fixed.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonNoNodesSelected (Accepted=True, Ready=True, Reconciling=False): no Windows node
	// matches the selector.
	ReasonNoNodesSelected = "NoNodesSelected"
	// ReasonAllNodesClaimed (Accepted=True, Ready=False, Reconciling=False, Stalled=True): every
	// Windows node the selector matches belongs to an older config, so this config manages
	// nothing; the message names the older configs.
	ReasonAllNodesClaimed = "AllNodesClaimed"
	// ReasonAllNodesProgrammed (Ready=True, Reconciling=False): every selected node is programmed.
	ReasonAllNodesProgrammed = "AllNodesProgrammed"
	// ReasonNodesNotProgrammed (Ready=False, Reconciling=True): some nodes are not yet (or no
	// longer) programmed, and none has failed.
	ReasonNodesNotProgrammed = "NodesNotProgrammed"
	// ReasonNodesFailing (Reconciling=False, Stalled=True): some nodes refused the config or
	// failed; see status.failingNodes. The other nodes keep rolling out.
	ReasonNodesFailing = "NodesFailing"
	// ReasonRollingOut (Progressing=True, Reconciling=True): nodes are being moved to the current
	// config.
	ReasonRollingOut = "RollingOut"
	// ReasonRolloutComplete (Progressing=False): every selected node has the current config.
	ReasonRolloutComplete = "RolloutComplete"
	// ReasonRolloutCompleteWithFailures (Progressing=False): every node that can use the config
	// has it, and some nodes refused it or failed; see status.failingNodes.
	ReasonRolloutCompleteWithFailures = "RolloutCompleteWithFailures"
	// ReasonRolloutStalled (Progressing=False, Reconciling=False, Stalled=True): a node reported
	// Degraded or missed the progress deadline for the new config; the rest of the fleet is left
	// as it is.
	ReasonRolloutStalled = "RolloutStalled"
	// ReasonRolloutPaused (Progressing=False, Reconciling=True): spec.rollout.paused is true and
	// some nodes wait for the current config (or, during a rollback, for the last good one).
	ReasonRolloutPaused = "RolloutPaused"
	// ReasonRolledBack (Ready=False, Reconciling=False, Stalled=True): the current spec failed on
	// some nodes and was rolled back to status.lastGood (see the RolledBack condition); only a
	// change of the spec makes the config Ready again.
	ReasonRolledBack = "RolledBack"
	// ReasonRollingBack (RolledBack=True, Progressing=True): nodes are being moved back to the
	// last good config, at most rollout.maxUnavailable at a time.
	ReasonRollingBack = "RollingBack"
	// ReasonRollbackComplete (RolledBack=True, Progressing=False): every node that can use it
	// runs the last good config again.
	ReasonRollbackComplete = "RollbackComplete"
	// ReasonNodesDegraded (Degraded=True): some nodes refused the config or failed; see
	// status.failingNodes.
	ReasonNodesDegraded = "NodesDegraded"
	// ReasonNodesDowngraded (DualStackDowngraded=True): some nodes proxy IPv4 only.
	ReasonNodesDowngraded = "NodesDowngraded"
	// ReasonNodesClaimedByOlderConfig (Conflicted=True): some selected nodes belong to an older
	// config; see status.conflictingNodes.
	ReasonNodesClaimedByOlderConfig = "NodesClaimedByOlderConfig"
)

// Reasons both kinds use.
//
// +docgen:reasons=WindowsProxyConfig,WindowsProxyNode
const (
	// ReasonAsExpected (Degraded=False, DualStackDowngraded=False, Conflicted=False,
	// Stalled=False, RolledBack=False): an abnormal-true condition is False because nothing is
	// wrong.
	ReasonAsExpected = "AsExpected"
)

// Reasons of per-node problems, in status.failingNodes and in the Warning Events the controller
// records about the config.
//
// +docgen:reasons=failingNodes
const (
	// ReasonUnknownFeatureGate: a gate does not exist at the node's Kubernetes version.
	ReasonUnknownFeatureGate = "UnknownFeatureGate"
	// ReasonFeatureGateLocked: a locked gate (GA) is set to a non-default value.
	ReasonFeatureGateLocked = "FeatureGateLocked"
	// ReasonFeatureGateDisabled: DSR or overlay needs a gate that is off at the node's version.
	ReasonFeatureGateDisabled = "FeatureGateDisabled"
	// ReasonInvalidNodeVersion: the node's kubelet version cannot be parsed.
	ReasonInvalidNodeVersion = "InvalidNodeVersion"
	// ReasonSourceVIPUnavailable (Ready=False, Reconciling=False, Stalled=True, SourceVIPReady=False, Programmed=False, DSRActive=Unknown,
	// DualStackDowngraded=Unknown): the source VIP cannot be determined for the node (missing or
	// invalid annotation, no pod CIDR, no address on the named HNS endpoint).
	//
	// +docgen:reasons=failingNodes,WindowsProxyNode
	ReasonSourceVIPUnavailable = "SourceVIPUnavailable"
	// ReasonSourceVIPUnusable: the node's source VIP is an address no source VIP may have: not a
	// unicast address (0.0.0.0, 255.255.255.255, loopback, multicast, link-local), or one a
	// Service ClusterIP already holds. A pod's address is refused by the node's agent
	// (SourceVIPConflict).
	ReasonSourceVIPUnusable = "SourceVIPUnusable"
	// ReasonProgressDeadlineExceeded: the node did not report the new config in time.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonNodeDegraded: the node's agent reports Degraded.
	ReasonNodeDegraded = "NodeDegraded"
)

// Reasons of WindowsProxyNode conditions, written by the agent.
//
// +docgen:reasons=WindowsProxyNode
const (
	// ReasonSynced (Ready=True, Reconciling=False, Programmed=True): every desired load balancer is in HNS.
	ReasonSynced = "Synced"
	// ReasonSyncFailed (Ready=False, Reconciling=False, Stalled=True, Programmed=False, Degraded=True): some HNS calls failed; they are retried
	// with backoff.
	ReasonSyncFailed = "SyncFailed"
	// ReasonWaitingForNetwork (Ready=False, Reconciling=True, Programmed=False, SourceVIPReady=Unknown, DSRActive=Unknown, DualStackDowngraded=Unknown): the HNS network is missing or being recreated.
	ReasonWaitingForNetwork = "WaitingForNetwork"
	// ReasonHNSNotRunning (Ready=False, Reconciling=False, Stalled=True, Programmed=False, Degraded=True): HNS answers 0x6b5; programmed state is
	// left as is.
	ReasonHNSNotRunning = "HNSNotRunning"
	// ReasonNetworkFound (NetworkReady=True).
	ReasonNetworkFound = "NetworkFound"
	// ReasonNetworkNotFound (Ready=False, Reconciling=False, Stalled=True, NetworkReady=False, Programmed=False, SourceVIPReady=Unknown, DSRActive=Unknown, DualStackDowngraded=Unknown): no HNS network has the configured name;
	// nothing is programmed and the agent keeps waiting.
	ReasonNetworkNotFound = "NetworkNotFound"
	// ReasonNetworkTypeMismatch (Ready=False, Reconciling=False, Stalled=True, NetworkReady=False, Programmed=False, SourceVIPReady=Unknown, DSRActive=Unknown, DualStackDowngraded=Unknown): the network's type differs from
	// spec.network.type; nothing is programmed.
	ReasonNetworkTypeMismatch = "NetworkTypeMismatch"
	// ReasonSourceVIPFound (SourceVIPReady=True).
	ReasonSourceVIPFound = "SourceVIPFound"
	// ReasonNotRequired (SourceVIPReady=True): the network is not overlay.
	ReasonNotRequired = "NotRequired"
	// ReasonSourceVIPEndpointMissing (Ready=False, Reconciling=False, Stalled=True, SourceVIPReady=False, Programmed=False, DSRActive=Unknown,
	// DualStackDowngraded=Unknown): the named endpoint does not exist yet.
	ReasonSourceVIPEndpointMissing = "SourceVIPEndpointMissing"
	// ReasonSourceVIPConflict (Ready=False, Reconciling=False, Stalled=True, SourceVIPReady=False, Programmed=False, DSRActive=Unknown,
	// DualStackDowngraded=Unknown): a pod's HNS endpoint already holds the address (strategy
	// Create: any endpoint the agent did not create; Static: one without the host's MAC, which
	// kube-proxy's source-VIP endpoint has), also a pod the API has no object for; the agent
	// refuses to take it.
	ReasonSourceVIPConflict = "SourceVIPConflict"
	// ReasonDSREnabled (DSRActive=True).
	ReasonDSREnabled = "DSREnabled"
	// ReasonDSRNotRequested (DSRActive=False): dsr.enabled is false.
	ReasonDSRNotRequested = "DSRNotRequested"
	// ReasonDSRUnsupported (DSRActive=False): the host's HNS has no DSR support.
	ReasonDSRUnsupported = "DSRUnsupported"
	// ReasonOverlayNetwork (DualStackDowngraded=True): overlay networks support IPv4 only.
	ReasonOverlayNetwork = "OverlayNetwork"
	// ReasonHNSUnsupported (Ready=False, Reconciling=False, Stalled=True, DualStackDowngraded=True, Programmed=False, SourceVIPReady=Unknown,
	// DSRActive=Unknown): HNS lacks what is needed: dual-stack (older than 11.10: only one
	// family is proxied), or HNS API v2 (older than 9.2: nothing is programmed).
	ReasonHNSUnsupported = "HNSUnsupported"
	// ReasonNodeIPUnknown (Ready=False, Reconciling=False, Stalled=True, Programmed=False, SourceVIPReady=Unknown, DSRActive=Unknown,
	// DualStackDowngraded=Unknown): overlay needs the node's IP (the provider address of its
	// endpoints) and neither the resolved config nor the Node has one; nothing is programmed.
	ReasonNodeIPUnknown = "NodeIPUnknown"
	// ReasonHostMACUnknown (Ready=False, Reconciling=False, Stalled=True, Programmed=False, SourceVIPReady=Unknown, DSRActive=Unknown,
	// DualStackDowngraded=Unknown): overlay needs the MAC of the host interface holding the node
	// IP and no interface holds it; nothing is programmed.
	ReasonHostMACUnknown = "HostMACUnknown"
	// ReasonDualStackNotRequested (DualStackDowngraded=False): dualStack.enabled is false.
	ReasonDualStackNotRequested = "DualStackNotRequested"
	// ReasonDualStackActive (DualStackDowngraded=False): both families are programmed.
	ReasonDualStackActive = "DualStackActive"
	// ReasonNodeNotSelected (Programmed=False): the node's WindowsProxyNode is gone; the agent
	// leaves HNS as it is.
	ReasonNodeNotSelected = "NodeNotSelected"
	// ReasonHealthCheckListening (HealthCheckServing=True): every health server listens.
	ReasonHealthCheckListening = "HealthCheckListening"
	// ReasonHealthCheckPortUnavailable (HealthCheckServing=False): a health server cannot listen
	// on its port (another process holds it, e.g. kube-proxy); the agent keeps trying every sync.
	ReasonHealthCheckPortUnavailable = "HealthCheckPortUnavailable"
	// ReasonHealthCheckDisabled (HealthCheckServing=False): --healthz-bind-address is empty, so no
	// health server runs; cloud load balancers see this node as unhealthy.
	ReasonHealthCheckDisabled = "HealthCheckDisabled"
)

// Reasons of a WindowsProxyNode's heartbeat and of its summary (Ready, Reconciling, Stalled).
// The summary's reason is the reason of the condition that decided it (e.g. Ready=True with
// Synced, Stalled=True with NetworkNotFound); these are the reasons only the heartbeat and the
// summary have.
//
// +docgen:reasons=WindowsProxyNode
const (
	// ReasonHeartbeatRenewed (AgentAlive=True): the agent renews its heartbeat Lease with a
	// healthy sync loop.
	ReasonHeartbeatRenewed = "HeartbeatRenewed"
	// ReasonHeartbeatLost (AgentAlive=False, Programmed=Unknown, Ready=Unknown, Ready=False,
	// Reconciling=False, Reconciling=True, Stalled=True): the agent's heartbeat Lease was not
	// renewed within --node-grace-period, or never appeared that long after the WindowsProxyNode
	// was created: the agent is stopped, crash-looping or cannot reach the API server, and the
	// node's HNS is not updated meanwhile. Once the heartbeat is back, Ready=False and
	// Reconciling=True keep this reason until the agent reports again. In status.failingNodes,
	// the node lost its heartbeat.
	//
	// +docgen:reasons=failingNodes,WindowsProxyNode
	ReasonHeartbeatLost = "HeartbeatLost"
	// ReasonSyncLoopStuck (AgentAlive=False, Programmed=Unknown, Ready=Unknown, Ready=False,
	// Reconciling=False, Reconciling=True, Stalled=True): the agent reported in its Lease that its
	// sync loop stopped making progress (HNS calls time out and no sync completes, the test of the
	// agent's /healthz) and stopped renewing it; as for HeartbeatLost, Ready=False and
	// Reconciling=True follow once it renews again, until it reports. In status.failingNodes, the
	// node's agent is stuck.
	//
	// +docgen:reasons=failingNodes,WindowsProxyNode
	ReasonSyncLoopStuck = "SyncLoopStuck"
	// ReasonProgrammingBehind (Programmed=False, Ready=False, Reconciling=True): a change has
	// waited for a sync longer than the health timeout (two sync periods), the point where
	// kube-proxy's /healthz fails: HNS is behind the cluster, typically during a long first sync
	// after a reboot.
	ReasonProgrammingBehind = "ProgrammingBehind"
	// ReasonSpecNotObserved (Ready=False, Reconciling=True): the agent has not reported on the
	// current spec (hash and generation) yet.
	ReasonSpecNotObserved = "SpecNotObserved"
)

// Problems the agent finds while it programs everything else, about one Service or about the
// node. They change no condition's status or reason: the message of Programmed=True (reason
// Synced) counts them and quotes the first, and `winproxy-agent plan` lists each with its reason.
//
// +docgen:reasons=WindowsProxyNode
const (
	// ReasonLocalEndpointNotFound (Programmed=True): a problem the message counts (the reason
	// stays Synced), of a Service: an endpoint on this node has no HNS endpoint yet (the CNI has
	// not created it); it is left out of the load balancers until it appears.
	ReasonLocalEndpointNotFound = "LocalEndpointNotFound"
	// ReasonMixedTargetPorts (Programmed=True): a problem the message counts (the reason stays
	// Synced), of a Service: the backends of one port listen on different ports, and an HNS load
	// balancer has one internal port; the port of the last backend (in "ip:port" order, as
	// kube-proxy) is used.
	ReasonMixedTargetPorts = "MixedTargetPorts"
	// ReasonFrontendConflict (Programmed=True): a problem the message counts (the reason stays
	// Synced), of a Service: one of its load balancers has the frontend (VIP, protocol, port) of
	// another Service's, which HNS refuses; the one that sorts first is programmed, not this one.
	ReasonFrontendConflict = "FrontendConflict"
	// ReasonSessionAffinityUnsupported (Programmed=True): a problem the message counts (the
	// reason stays Synced), of a Service: sessionAffinity: ClientIP needs HNS 12.0 (Windows Server
	// 2022); its connections are spread without affinity.
	ReasonSessionAffinityUnsupported = "SessionAffinityUnsupported"
	// ReasonExternalTrafficPolicyLocalNotHonoured (Programmed=True): a problem the message counts
	// (the reason stays Synced), of a Service: externalTrafficPolicy: Local needs HNS DSR support,
	// which the host lacks; its external load balancers use every backend, as kube-proxy's do.
	ReasonExternalTrafficPolicyLocalNotHonoured = "ExternalTrafficPolicyLocalNotHonoured"
	// ReasonNoRemoteSubnetRoute (Programmed=True): a problem the message counts (the reason stays
	// Synced), of a Service: a backend is in another node's pod CIDR, but the overlay network has
	// no remote-subnet route for it yet; it is treated as an address outside the cluster (its
	// provider address and the source VIP are the node IP).
	ReasonNoRemoteSubnetRoute = "NoRemoteSubnetRoute"
	// ReasonIngressIPUnusable (Programmed=True): a problem the message counts (the reason stays
	// Synced), of a Service: a load-balancer ingress IP in its status is not a unicast address
	// (0.0.0.0, 127.0.0.1, a multicast or link-local address, the broadcast address); no load
	// balancer is programmed for it, where kube-proxy programs one.
	ReasonIngressIPUnusable = "IngressIPUnusable"
	// ReasonHealthCheckEndpointMissing (Programmed=True): a problem the message counts (the reason
	// stays Synced), of the node: healthCheck.forwardVIP is set but no HNS endpoint has the root
	// endpoint's name, so no health-check load balancers are programmed.
	ReasonHealthCheckEndpointMissing = "HealthCheckEndpointMissing"
)
