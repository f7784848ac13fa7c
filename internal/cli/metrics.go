package cli

import crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

// RegisterClientMetrics turns on client-go's request metrics besides rest_client_requests_total,
// which controller-runtime serves by default: latency, sizes, rate-limiter waits and retries,
// under the names, labels and buckets kube-proxy and the other Kubernetes components export
// them (component-base's client-go registration), so that kube-proxy's dashboards, e.g.
// kubernetes-mixin's request-latency panels, show the agents too.
func RegisterClientMetrics() {
	crmetrics.RegisterRESTClientMetrics(crmetrics.MetricRequestLatency, crmetrics.MetricDNSResolutionLatency,
		crmetrics.MetricRequestSize, crmetrics.MetricResponseSize, crmetrics.MetricRateLimiterLatency,
		crmetrics.MetricRequestRetry)
}
