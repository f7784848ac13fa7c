package daemon

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/winproxy/winproxy/agent/engine"
)

// The agent runs on every Windows node and caches every Service and EndpointSlice of the cluster
// and every Node: its informers keep only what it reads (the engine, the health servers, the
// change SLIs, the Events it records), so that its memory follows what it proxies, not the
// objects' other fields. A real Node carries its images, conditions and volumes; an
// EndpointSlice's endpoints their target Pods; a Service its pod selector.

// slimNode keeps of a Node what the engine (InternalIPs, pod CIDRs, the zone label), the proxy
// health server (deletion, the cluster autoscaler's taint) and Events (identity) read. A managed
// cluster's Node carries twenty labels or more (OS, architecture, instance type, region, the
// cloud's node pool and image) and several addresses (host name, DNS names, external IP); every
// agent caches every Node, so only the zone label and the InternalIPs are kept. An update that
// changes only what is dropped then also triggers no sync (nodeinfo.AgentInputsChanged).
func slimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return &corev1.Node{
		TypeMeta: n.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion,
			DeletionTimestamp: n.DeletionTimestamp, Labels: only(n.Labels, corev1.LabelTopologyZone)},
		Spec:   corev1.NodeSpec{PodCIDR: n.Spec.PodCIDR, PodCIDRs: n.Spec.PodCIDRs, Taints: n.Spec.Taints},
		Status: corev1.NodeStatus{Addresses: internalIPs(n.Status.Addresses)},
	}, nil
}

// internalIPs are a Node's InternalIP entries (nodeinfo.InternalIPs reads them), the given slice
// when it has nothing else.
func internalIPs(addrs []corev1.NodeAddress) []corev1.NodeAddress {
	if !slices.ContainsFunc(addrs, func(a corev1.NodeAddress) bool { return a.Type != corev1.NodeInternalIP }) {
		return addrs
	}
	var out []corev1.NodeAddress
	for _, a := range addrs {
		if a.Type == corev1.NodeInternalIP {
			out = append(out, a)
		}
	}
	return out
}

// cachedService is what the agent's informer stores of a Service: the metadata the informer keys
// and versions it by, and the engine's form of it (engine.Service, a quarter of the API's size, its
// addresses parsed once). Like cachedSlice it is a runtime.Object but not a Service: nothing in the
// agent Gets or Lists Services from the cache.
type cachedService struct {
	cacheMeta
	svc *engine.Service
}

// GetObjectKind says nothing of the kind: a cachedService is never encoded.
func (c *cachedService) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies c and everything it points to.
func (c *cachedService) DeepCopyObject() runtime.Object {
	return &cachedService{cacheMeta: c.cacheMeta, svc: c.svc.DeepCopy()}
}

// slimService turns the Services the informer receives into cachedServices.
func slimService(obj any) (any, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	return &cachedService{cacheMeta: metaOf(svc), svc: engine.ServiceOf(svc)}, nil
}

// cachedSlice is what the agent's informer stores of an EndpointSlice: the metadata the informer
// keys and versions it by, the engine's form of it (engine.Slice, a third of the API's size), and
// its change trigger time (kube-proxy's network-programming SLI), parsed. It is a runtime.Object,
// as client-go's debugging aids expect of what an informer stores (the watch-list consistency
// detector, KUBE_WATCHLIST_INCONSISTENCY_DETECTOR), but not an EndpointSlice: the manager's
// client cannot Get or List EndpointSlices from the cache, which nothing in the agent does.
type cachedSlice struct {
	cacheMeta
	slice *engine.Slice
	// trigger is the endpoints.kubernetes.io/last-change-trigger-time, zero when unset or malformed.
	trigger time.Time
}

// GetObjectKind says nothing of the kind: a cachedSlice is never encoded.
func (c *cachedSlice) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies c and everything it points to.
func (c *cachedSlice) DeepCopyObject() runtime.Object {
	return &cachedSlice{cacheMeta: c.cacheMeta, slice: c.slice.DeepCopy(), trigger: c.trigger}
}

// slimSlice turns the EndpointSlices the informer receives into cachedSlices. The node names of a
// cluster's endpoints, a few hundred values repeated a hundred thousand times, are each held once
// by the engine's form (engine.SliceEndpoint.Node).
func slimSlice(obj any) (any, error) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return obj, nil
	}
	out := &cachedSlice{
		cacheMeta: metaOf(es),
		slice:     engine.SliceOf(es),
	}
	if ts, err := time.Parse(time.RFC3339Nano, es.Annotations[corev1.EndpointsLastChangeTriggerTime]); err == nil {
		out.trigger = ts
	}
	return out, nil
}

// only keeps the given keys of m; nil when none is there.
func only(m map[string]string, keys ...string) map[string]string {
	var out map[string]string
	for _, k := range keys {
		if v, ok := m[k]; ok {
			if out == nil {
				out = make(map[string]string, len(keys))
			}
			out[k] = v
		}
	}
	return out
}
