// Package v1alpha1 contains the winproxy.io/v1alpha1 API: WindowsProxyConfig, the cluster admin's
// declarative Windows service-proxy configuration, and WindowsProxyNode, its per-node resolution
// (spec, written by the controller) and what the node's agent really programmed (status).
//
// +kubebuilder:object:generate=true
// +groupName=winproxy.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "winproxy.io", Version: "v1alpha1"}

	// SchemeBuilder registers this API's kinds with a runtime.Scheme. It depends on apimachinery
	// only, so that importing the API pulls in no controller machinery.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this API's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&WindowsProxyConfig{}, &WindowsProxyConfigList{},
		&WindowsProxyNode{}, &WindowsProxyNodeList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
