// Package selectors holds the selectors kube-proxy lists Services and EndpointSlices with
// (cmd/kube-proxy/app/server.go), so that the API server, not the agent, filters out what
// kube-proxy would not proxy: Services another proxy implements (labelled
// service.kubernetes.io/service-proxy-name), headless Services (DNS serves them) and their
// EndpointSlices. Everything that reads the cluster as the agent does uses them: the agent's
// cache and `winproxy-agent plan --kubeconfig`.
package selectors

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// ServiceProxyNameLabel marks a Service as implemented by another proxy
// (k8s.io/kubernetes pkg/proxy/apis LabelServiceProxyName).
const ServiceProxyNameLabel = "service.kubernetes.io/service-proxy-name"

var (
	// ServiceLabels selects the Services no other proxy claims.
	ServiceLabels = mustParse("!" + ServiceProxyNameLabel)
	// ServiceFields selects the Services that are not headless.
	ServiceFields = fields.OneTermNotEqualSelector("spec.clusterIP", corev1.ClusterIPNone)
	// EndpointSliceLabels selects the EndpointSlices of Services that are not headless.
	EndpointSliceLabels = mustParse("!" + corev1.IsHeadlessService)
)

func mustParse(s string) labels.Selector {
	sel, err := labels.Parse(s)
	if err != nil {
		panic(err)
	}
	return sel
}
