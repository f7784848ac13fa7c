package v1alpha1

// Condition types of WindowsProxyConfig. Ready is the summary that `kubectl wait
// --for=condition=Ready` and kstatus read.
const (
	// ConditionAccepted is True when the spec is valid and resolvable on at least the nodes it
	// selects; False (e.g. InvalidFeatureGates) means nothing new is rolled out.
	ConditionAccepted = "Accepted"
	// ConditionReady is True when every selected node runs the current generation and reports
	// Programmed.
	ConditionReady = "Ready"
	// ConditionProgressing is True while a rollout is under way; False with RolloutStalled when a
	// node failed it.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when at least one node failed to program or lost its state.
	ConditionDegraded = "Degraded"
	// ConditionDualStackDowngraded is True when at least one node fell back from dual-stack to IPv4.
	ConditionDualStackDowngraded = "DualStackDowngraded"
	// ConditionConflicted is True when another, older config also selects some of these nodes.
	ConditionConflicted = "Conflicted"
)

// Condition types of WindowsProxyNode, written by the agent.
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
	// ConditionDegraded (shared with WindowsProxyConfig) is True when some load balancers failed.
)

// Reasons of WindowsProxyConfig conditions.
const (
	// ReasonValid (Accepted=True): the spec resolved on every selected node.
	ReasonValid = "Valid"
	// ReasonInvalidFeatureGates (Accepted=False): the feature gates are wrong on every selected
	// node; each node keeps its last good config.
	ReasonInvalidFeatureGates = "InvalidFeatureGates"
	// ReasonPartiallyResolved (Accepted=True): the spec resolved on some selected nodes only; the
	// others keep their last good config and are listed in status.failingNodes.
	ReasonPartiallyResolved = "PartiallyResolved"
	// ReasonNodesUnresolvable (Accepted=False): the spec cannot be resolved on any selected node,
	// for reasons other than feature gates alone (e.g. no node has a source VIP).
	ReasonNodesUnresolvable = "NodesUnresolvable"
	// ReasonInvalidNodeSelector (Accepted=False, Ready=False, Progressing=False): spec.nodeSelector
	// cannot be parsed; the config keeps the nodes it holds, unchanged, and selects no other.
	ReasonInvalidNodeSelector = "InvalidNodeSelector"
	// ReasonNoNodesSelected (Accepted=True, Ready=True): no Windows node matches the selector.
	ReasonNoNodesSelected = "NoNodesSelected"
	// ReasonAllNodesProgrammed (Ready=True): every selected node is programmed.
	ReasonAllNodesProgrammed = "AllNodesProgrammed"
	// ReasonNodesNotProgrammed (Ready=False): some nodes are not yet (or no longer) programmed.
	ReasonNodesNotProgrammed = "NodesNotProgrammed"
	// ReasonRollingOut (Progressing=True): nodes are being moved to the current config.
	ReasonRollingOut = "RollingOut"
	// ReasonRolloutComplete (Progressing=False): every node has the current config.
	ReasonRolloutComplete = "RolloutComplete"
	// ReasonRolloutStalled (Progressing=False): a node reported Degraded or missed the progress
	// deadline for the new config; the rest of the fleet is left as it is.
	ReasonRolloutStalled = "RolloutStalled"
	// ReasonRolloutPaused (Progressing=False): spec.rollout.paused is true.
	ReasonRolloutPaused = "RolloutPaused"
	// ReasonNodesDegraded (Degraded=True): some nodes failed; see status.failingNodes.
	ReasonNodesDegraded = "NodesDegraded"
	// ReasonAsExpected is the reason of an abnormal-true condition (Degraded, DualStackDowngraded,
	// Conflicted) that is False because nothing is wrong.
	ReasonAsExpected = "AsExpected"
	// ReasonNodesDowngraded (DualStackDowngraded=True): some nodes proxy IPv4 only.
	ReasonNodesDowngraded = "NodesDowngraded"
	// ReasonNodesClaimedByOlderConfig (Conflicted=True): some selected nodes belong to an older
	// config; see status.conflictingNodes.
	ReasonNodesClaimedByOlderConfig = "NodesClaimedByOlderConfig"
)

// Reasons of per-node problems: in status.failingNodes and in WindowsProxyNode conditions.
const (
	// ReasonUnknownFeatureGate: a gate does not exist at the node's Kubernetes version.
	ReasonUnknownFeatureGate = "UnknownFeatureGate"
	// ReasonFeatureGateLocked: a locked gate (GA) is set to a non-default value.
	ReasonFeatureGateLocked = "FeatureGateLocked"
	// ReasonFeatureGateDisabled: DSR or overlay needs a gate that is off at the node's version.
	ReasonFeatureGateDisabled = "FeatureGateDisabled"
	// ReasonInvalidNodeVersion: the node's kubelet version cannot be parsed.
	ReasonInvalidNodeVersion = "InvalidNodeVersion"
	// ReasonSourceVIPUnavailable: the source VIP cannot be determined for the node (missing or
	// invalid annotation, no pod CIDR).
	ReasonSourceVIPUnavailable = "SourceVIPUnavailable"
	// ReasonProgressDeadlineExceeded: the node did not report the new config in time.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonNodeDegraded: the node's agent reports Degraded.
	ReasonNodeDegraded = "NodeDegraded"
)

// Reasons of WindowsProxyNode conditions, written by the agent.
const (
	// ReasonSynced (Programmed=True): every desired load balancer is in HNS.
	ReasonSynced = "Synced"
	// ReasonSyncFailed (Programmed=False, Degraded=True): some HNS calls failed; they are retried
	// with backoff.
	ReasonSyncFailed = "SyncFailed"
	// ReasonWaitingForNetwork (Programmed=False): the HNS network is missing or being recreated.
	ReasonWaitingForNetwork = "WaitingForNetwork"
	// ReasonHNSNotRunning (Programmed=False): HNS answers 0x6b5; programmed state is left as is.
	ReasonHNSNotRunning = "HNSNotRunning"
	// ReasonNetworkFound (NetworkReady=True).
	ReasonNetworkFound = "NetworkFound"
	// ReasonNetworkNotFound (NetworkReady=False): no HNS network has the configured name; the
	// agent keeps waiting.
	ReasonNetworkNotFound = "NetworkNotFound"
	// ReasonNetworkTypeMismatch (NetworkReady=False): the network's type differs from
	// spec.network.type.
	ReasonNetworkTypeMismatch = "NetworkTypeMismatch"
	// ReasonSourceVIPFound (SourceVIPReady=True).
	ReasonSourceVIPFound = "SourceVIPFound"
	// ReasonNotRequired (SourceVIPReady=True): the network is not overlay.
	ReasonNotRequired = "NotRequired"
	// ReasonSourceVIPEndpointMissing (SourceVIPReady=False): the named endpoint does not exist yet.
	ReasonSourceVIPEndpointMissing = "SourceVIPEndpointMissing"
	// ReasonSourceVIPConflict (SourceVIPReady=False): another HNS endpoint (a pod) already holds the
	// address; the agent refuses to take it.
	ReasonSourceVIPConflict = "SourceVIPConflict"
	// ReasonDSREnabled (DSRActive=True).
	ReasonDSREnabled = "DSREnabled"
	// ReasonDSRNotRequested (DSRActive=False): dsr.enabled is false.
	ReasonDSRNotRequested = "DSRNotRequested"
	// ReasonDSRUnsupported (DSRActive=False): the host's HNS has no DSR support.
	ReasonDSRUnsupported = "DSRUnsupported"
	// ReasonOverlayNetwork (DualStackDowngraded=True): overlay networks support IPv4 only.
	ReasonOverlayNetwork = "OverlayNetwork"
	// ReasonHNSUnsupported (DualStackDowngraded=True): HNS older than 11.10 has no dual-stack.
	ReasonHNSUnsupported = "HNSUnsupported"
	// ReasonDualStackNotRequested (DualStackDowngraded=False): dualStack.enabled is false.
	ReasonDualStackNotRequested = "DualStackNotRequested"
	// ReasonDualStackActive (DualStackDowngraded=False): both families are programmed.
	ReasonDualStackActive = "DualStackActive"
	// ReasonNodeNotSelected (Programmed=False): the node's WindowsProxyNode is gone; the agent
	// leaves HNS as it is.
	ReasonNodeNotSelected = "NodeNotSelected"
)
