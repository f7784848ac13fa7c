package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// CacheOptions keep the controller's memory small on large fleets: managed fields are dropped
// from every cached object and Nodes are cached with only what resolution reads (labels,
// annotations, pod CIDRs, addresses, kubelet version), not their images, conditions or volumes.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Node{}: {Transform: slimNode},
		},
	}
}

// slimNode is a cache transform that keeps the fields of a Node the controller reads.
func slimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return &corev1.Node{
		TypeMeta: n.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              n.Name,
			UID:               n.UID,
			ResourceVersion:   n.ResourceVersion,
			Generation:        n.Generation,
			CreationTimestamp: n.CreationTimestamp,
			DeletionTimestamp: n.DeletionTimestamp,
			Labels:            n.Labels,
			Annotations:       n.Annotations,
		},
		Spec: corev1.NodeSpec{PodCIDR: n.Spec.PodCIDR, PodCIDRs: n.Spec.PodCIDRs},
		Status: corev1.NodeStatus{
			Addresses: n.Status.Addresses,
			NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: n.Status.NodeInfo.KubeletVersion},
		},
	}, nil
}

// nodeChanged passes Node updates that can change a config's selection or resolution, and
// drops the rest (kubelet status updates), so a quiet cluster causes no reconciles.
var nodeChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Node)
		n, ok2 := e.ObjectNew.(*corev1.Node)
		if !ok1 || !ok2 {
			return true
		}
		return !equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
			!equality.Semantic.DeepEqual(o.Annotations, n.Annotations) ||
			!equality.Semantic.DeepEqual(o.Spec.PodCIDRs, n.Spec.PodCIDRs) || o.Spec.PodCIDR != n.Spec.PodCIDR ||
			!equality.Semantic.DeepEqual(o.Status.Addresses, n.Status.Addresses) ||
			o.Status.NodeInfo.KubeletVersion != n.Status.NodeInfo.KubeletVersion
	},
}
