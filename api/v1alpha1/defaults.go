package v1alpha1

// DefaultHealthCheckPort is spec.healthCheck.port's default: the port of kube-proxy's default
// --healthz-bind-address (0.0.0.0:10256), where cloud load balancers probe node health.
const DefaultHealthCheckPort = 10256
