package v1alpha1

// The defaults of WindowsProxyConfig fields that Go code also needs, for objects stored before a
// field existed and for configs that never went through the API server (plan's files, tests).
// The CRD markers state them again as literals (controller-gen needs one there);
// TestDefaultsMatchCRD keeps the two equal.
const (
	// DefaultHealthCheckPort is spec.healthCheck.port's default: the port of kube-proxy's default
	// --healthz-bind-address (0.0.0.0:10256), where cloud load balancers probe node health.
	DefaultHealthCheckPort = 10256

	// DefaultRootEndpointName is spec.healthCheck.rootEndpointName's default: kube-proxy's default
	// --root-hnsendpoint-name, the host endpoint health-check load balancers forward to.
	DefaultRootEndpointName = "cbr0"

	// DefaultSyncPeriodSeconds is spec.sync.periodSeconds's default, the longest time between two
	// syncs.
	DefaultSyncPeriodSeconds = 30

	// DefaultSourceVIPOffsetFromEnd is spec.overlay.sourceVIP.create.offsetFromEnd's default: the
	// last usable address of the node's pod CIDR.
	DefaultSourceVIPOffsetFromEnd = 1
)
