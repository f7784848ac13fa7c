package daemon

import (
	"context"
	"net/netip"
	"testing"
	"time"
	"unique"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/consistencydetector"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// The informers keep what the agent reads of each object, and only that: every field below that
// the engine, the health servers or the SLIs read survives, everything else goes.
func TestSlimObjects(t *testing.T) {
	now := metav1.Now()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "win-1", UID: "u1", ResourceVersion: "7", DeletionTimestamp: &now,
			Labels: map[string]string{corev1.LabelTopologyZone: "z1", corev1.LabelOSStable: "windows", corev1.LabelHostname: "win-1",
				corev1.LabelInstanceTypeStable: "Standard_D4s_v5", "kubernetes.azure.com/agentpool": "win"},
			Annotations:   map[string]string{"big": "x"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24"}, ProviderID: "azure://x",
			Taints: []corev1.Taint{{Key: "ToBeDeletedByClusterAutoscaler", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "win-1"},
			{Type: corev1.NodeInternalIP, Address: "10.0.0.4"}, {Type: corev1.NodeExternalIP, Address: "20.0.0.4"},
			{Type: corev1.NodeInternalIP, Address: "fd00::4"}, {Type: corev1.NodeInternalDNS, Address: "win-1.internal"}},
			Images:     []corev1.ContainerImage{{Names: []string{"mcr.microsoft.com/windows/servercore"}}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	wantNode := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "win-1", UID: "u1", ResourceVersion: "7", DeletionTimestamp: &now,
			Labels: map[string]string{corev1.LabelTopologyZone: "z1"}},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24"}, Taints: node.Spec.Taints},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.4"},
			{Type: corev1.NodeInternalIP, Address: "fd00::4"}}},
	}
	itpLocal := corev1.ServiceInternalTrafficPolicyLocal
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u2", ResourceVersion: "8",
			Annotations: map[string]string{engine.AnnotationWinProxyOptimization: "disabled", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
			Labels:      map[string]string{"app": "web"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"},
			Selector: map[string]string{"app": "web"}, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal, HealthCheckNodePort: 30100,
			InternalTrafficPolicy: &itpLocal, SessionAffinity: corev1.ServiceAffinityClientIP, ExternalIPs: []string{"50.0.0.1"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: 30080, Protocol: corev1.ProtocolTCP}}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "20.0.0.1"}}},
			Conditions: []metav1.Condition{{Type: "LoadBalancerReady"}}},
	}
	wantSvc := &cachedService{
		cacheMeta: cacheMeta{name: "web", namespace: "ns", resourceVersion: "8"},
		svc: &engine.Service{Namespace: "ns", Name: "web", Proxied: true, LoadBalancer: true, ExternalTrafficLocal: true,
			InternalTrafficLocal: true, ClientIPAffinity: true, Recreate: true, HealthCheckNodePort: 30100,
			ClusterIPs: [2]netip.Addr{netip.MustParseAddr("10.96.0.10")}, ExternalIPs: []netip.Addr{netip.MustParseAddr("50.0.0.1")},
			Ingress: []netip.Addr{netip.MustParseAddr("20.0.0.1")},
			Ports:   []engine.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080, TargetPort: 8080}}},
	}
	nodeName, zone, ready, serving := "win-1", "z1", true, false
	port, proto, portName := int32(8080), corev1.ProtocolTCP, "http"
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-x", Namespace: "ns", UID: "u3", ResourceVersion: "9",
			Labels:      map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"},
			Annotations: map[string]string{corev1.EndpointsLastChangeTriggerTime: "2026-01-01T00:00:00Z", "other": "y"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port, Protocol: &proto}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, NodeName: &nodeName, Zone: &zone, Hostname: &nodeName,
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving},
			Hints:      &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "z1"}}},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "web-abc", UID: "u4"}}},
	}
	wantSlice := &cachedSlice{
		cacheMeta: cacheMeta{name: "web-x", namespace: "ns", resourceVersion: "9"},
		slice: &engine.Slice{Namespace: "ns", Name: "web-x", Service: "web", Family: v1alpha1.IPv4,
			Ports: []engine.SlicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 8080}},
			Endpoints: []engine.SliceEndpoint{{Addr: netip.MustParseAddr("10.244.1.5"), Node: unique.Make("win-1"), Hints: slice.Endpoints[0].Hints,
				Ready: true, Serving: false}}},
		trigger: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}

	for _, tc := range []struct {
		name      string
		transform func(any) (any, error)
		in, want  any
	}{
		{"node", slimNode, node, wantNode},
		{"service", slimService, svc, wantSvc},
		{"endpoint slice", slimSlice, slice, wantSlice},
		{"a tombstone is passed on", slimNode, "not a node", "not a node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.transform(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(cachedSlice{}, cachedService{}, cacheMeta{}), cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
				cmp.Comparer(func(a, b unique.Handle[string]) bool { return a == b })); diff != "" {
				t.Errorf("slim %s (-want +got):\n%s", tc.name, diff)
			}
		})
	}
	// Two slices' endpoints on one node share its name.
	other := slice.DeepCopy()
	other.Endpoints[0].NodeName = new(string(append([]byte(nil), nodeName...)))
	a, _ := slimSlice(slice)
	b, _ := slimSlice(other)
	na, nb := a.(*cachedSlice).slice.Endpoints[0].Node.Value(), b.(*cachedSlice).slice.Endpoints[0].Node.Value()
	if unsafe.StringData(na) != unsafe.StringData(nb) {
		t.Errorf("the node name %q is held twice: %p, %p", na, unsafe.StringData(na), unsafe.StringData(nb))
	}
}

// What the informer stores of an EndpointSlice is a runtime.Object whose deep copy shares nothing,
// and survives client-go's watch-list consistency check (KUBE_WATCHLIST_INCONSISTENCY_DETECTOR),
// which transforms a fresh list's items and compares them with the informer's.
func TestCachedSliceIsAnObject(t *testing.T) {
	port, zone := int32(8080), "z1"
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-x", Namespace: "ns", UID: "u3", ResourceVersion: "9", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Port: &port}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, NodeName: new("win-1"),
			Hints: &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: zone}}}}},
	}
	stored, copied := storedAndCopied(t, slimSlice, es)
	cp := copied.(*cachedSlice)
	cp.slice.Ports[0].Port, cp.slice.Endpoints[0].Hints.ForZones[0].Name = 1, "z2"
	cp.SetName("other")
	orig := stored.(*cachedSlice)
	if orig.slice.Ports[0].Port != 8080 || orig.slice.Endpoints[0].Hints.ForZones[0].Name != "z1" || orig.GetName() != "web-x" {
		t.Errorf("the copy shares memory with the original: %+v", orig.slice)
	}

	list := func(context.Context, metav1.ListOptions) (*discoveryv1.EndpointSliceList, error) {
		return &discoveryv1.EndpointSliceList{Items: []discoveryv1.EndpointSlice{*es.DeepCopy()}}, nil
	}
	consistencydetector.CheckDataConsistency(context.Background(), "endpointslices", "9", list, slimSlice, metav1.ListOptions{},
		func() []any { return []any{stored} })
}

// So is what it stores of a Service.
func TestCachedServiceIsAnObject(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u2", ResourceVersion: "8"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", ExternalIPs: []string{"50.0.0.1"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "20.0.0.1"}}}},
	}
	stored, copied := storedAndCopied(t, slimService, svc)
	cp := copied.(*cachedService)
	cp.svc.Ports[0].Port, cp.svc.ExternalIPs[0], cp.svc.Ingress[0] = 1, netip.Addr{}, netip.Addr{}
	cp.SetName("other")
	orig := stored.(*cachedService)
	if orig.svc.Ports[0].Port != 80 || !orig.svc.ExternalIPs[0].IsValid() || !orig.svc.Ingress[0].IsValid() || orig.GetName() != "web" {
		t.Errorf("the copy shares memory with the original: %+v", orig.svc)
	}

	list := func(context.Context, metav1.ListOptions) (*corev1.ServiceList, error) {
		return &corev1.ServiceList{Items: []corev1.Service{*svc.DeepCopy()}}, nil
	}
	consistencydetector.CheckDataConsistency(context.Background(), "services", "8", list, slimService, metav1.ListOptions{},
		func() []any { return []any{stored} })
}

// storedAndCopied is what transform stores of in, which must be a runtime.Object, and its deep
// copy, which must equal it.
func storedAndCopied(t *testing.T, transform func(any) (any, error), in any) (stored any, copied runtime.Object) {
	t.Helper()
	stored, err := transform(in)
	if err != nil {
		t.Fatal(err)
	}
	obj, ok := stored.(runtime.Object)
	if !ok {
		t.Fatalf("the informer stores a %T, not a runtime.Object", stored)
	}
	copied = obj.DeepCopyObject()
	opts := cmp.Options{cmp.AllowUnexported(cachedSlice{}, cachedService{}, cacheMeta{}), cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
		cmp.Comparer(func(a, b unique.Handle[string]) bool { return a == b })}
	if diff := cmp.Diff(stored, copied, opts); diff != "" {
		t.Errorf("DeepCopyObject (-want +got):\n%s", diff)
	}
	return stored, copied
}

// TestInformersKeepNoNamespaceIndex: the agent's informers drop the namespace index
// controller-runtime asks for, and still find an object by its key.
func TestInformersKeepNoNamespaceIndex(t *testing.T) {
	inf := newInformer(&toolscache.ListWatch{}, &corev1.Service{}, 0,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	if got := inf.GetIndexer().GetIndexers(); len(got) != 0 {
		t.Errorf("the informer keeps the indexes %v", got)
	}
	svc, err := slimService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: "8"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := inf.GetStore().Add(svc); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := inf.GetStore().GetByKey("ns/web"); err != nil || !ok || got != svc {
		t.Errorf("looked up by its key: %v, %v, %v", got, ok, err)
	}
}
