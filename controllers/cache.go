package controllers

import (
	"context"
	"fmt"
	"net/netip"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/nodeinfo"
	"github.com/winproxy/winproxy/internal/resolve"
)

// CacheOptions keep the controller's memory small on large fleets: managed fields are dropped
// from every cached object and Nodes are cached with only what resolution reads (labels,
// annotations, pod CIDRs, addresses, kubelet version), not their images, conditions or volumes.
// Services are cached only for the ClusterIPs they hold, which a source VIP must not be. Pods are
// not read at all: whether a pod holds a source VIP only the node's agent can tell (its HNS
// endpoints, also of pods the API has no object for yet), and it refuses the address.
//
// Leases are cached only where the agents' heartbeats are (heartbeatNamespace) and only those
// labelled as heartbeats: not the kubelets' node Leases nor the leader-election Lease.
func CacheOptions(heartbeatNamespace string) cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&coordinationv1.Lease{}: {
				Namespaces: map[string]cache.Config{heartbeatNamespace: {}},
				Label:      labels.SelectorFromSet(labels.Set{winproxyv1alpha1.HeartbeatLabel: "true"}),
			},
			&corev1.Node{}:    {Transform: slimNode},
			&corev1.Service{}: {Transform: slimService},
		},
	}
}

// Cache indexes: WindowsProxyNodes by the config their spec names, Services by ClusterIP.
const (
	configNameField = "spec.configName"
	clusterIPField  = "spec.clusterIPs"
)

// IndexFields registers the cache indexes the reconciler reads through with idx: the manager's
// cache, or a test's. Registering an index also starts the informer of its kind with the manager,
// so the cache of Services is synced before the controller reconciles and before it reports
// ready.
func IndexFields(ctx context.Context, idx client.FieldIndexer) error {
	for _, i := range []struct {
		obj   client.Object
		field string
		fn    client.IndexerFunc
	}{
		{&winproxyv1alpha1.WindowsProxyNode{}, configNameField, func(o client.Object) []string {
			return []string{o.(*winproxyv1alpha1.WindowsProxyNode).Spec.ConfigName}
		}},
		{&corev1.Service{}, clusterIPField, func(o client.Object) []string {
			return serviceIPs(o.(*corev1.Service))
		}},
	} {
		if err := idx.IndexField(ctx, i.obj, i.field, i.fn); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", i.obj, i.field, err)
		}
	}
	return nil
}

// serviceIPs are a Service's ClusterIPs, normalised; a headless Service has none.
func serviceIPs(svc *corev1.Service) []string {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	return normalisedIPs(ips)
}

// normalisedIPs parses ips and returns them in netip's canonical form, the key of the indexes.
func normalisedIPs(ips []string) []string {
	var out []string
	for _, s := range ips {
		if ip, err := netip.ParseAddr(s); err == nil {
			out = append(out, ip.Unmap().String())
		}
	}
	return out
}

// addressHolder names the Service that holds an address, from the cache indexes. A failed
// lookup holds nothing: it is logged, and the next reconcile looks again.
func (r *WindowsProxyConfigReconciler) addressHolder(ctx context.Context) resolve.AddressHolder {
	return func(ip netip.Addr) string {
		key := ip.Unmap().String()
		var svcs corev1.ServiceList
		if err := r.client.List(ctx, &svcs, client.MatchingFields{clusterIPField: key}, client.UnsafeDisableDeepCopy); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Looking up the Services that hold an address failed", "address", key)
		} else if len(svcs.Items) > 0 {
			return fmt.Sprintf("the ClusterIP of Service %s/%s", svcs.Items[0].Namespace, svcs.Items[0].Name)
		}
		return ""
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

// slimService is a cache transform that keeps the ClusterIPs of a Service.
func slimService(obj any) (any, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	return &corev1.Service{
		TypeMeta:   svc.TypeMeta,
		ObjectMeta: slimMeta(&svc.ObjectMeta),
		Spec:       corev1.ServiceSpec{ClusterIP: svc.Spec.ClusterIP, ClusterIPs: svc.Spec.ClusterIPs},
	}, nil
}

// slimMeta keeps the identity of an object.
func slimMeta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion}
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
		return nodeinfo.ControllerInputsChanged(o, n)
	},
}
