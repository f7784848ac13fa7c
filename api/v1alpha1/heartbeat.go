package v1alpha1

// The agents' heartbeats are coordination.k8s.io/v1 Leases, as the kubelets' are: one per node,
// named after the node, in the agent's namespace, renewed every --heartbeat-interval while the
// agent's sync loop is healthy. The controller reads them to tell a live node from a silent one
// (the AgentAlive condition). These are the parts of a heartbeat Lease both sides agree on.
const (
	// HeartbeatLabel marks a Lease as an agent's heartbeat (value "true"), so that the controller
	// caches these Leases and not the others of the namespace.
	HeartbeatLabel = "winproxy.io/heartbeat"
	// SyncLoopStuckAnnotation on a heartbeat Lease is the agent's last word when its sync loop stops
	// making progress (why, in a sentence): it stops renewing the Lease, and the controller reports
	// the node stuck at once instead of waiting for the grace period. The agent removes it with the
	// next renewal.
	SyncLoopStuckAnnotation = "winproxy.io/sync-loop-stuck"
	// DefaultHeartbeatIntervalSeconds is how often an agent renews its Lease by default, as the
	// kubelet renews its node Lease.
	DefaultHeartbeatIntervalSeconds = 10
	// DefaultNodeGracePeriodSeconds is how old a Lease may get before the controller reports the
	// node's agent lost, by default: the node lifecycle controller's --node-monitor-grace-period.
	DefaultNodeGracePeriodSeconds = 40
)
