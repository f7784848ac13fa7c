package daemon

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

func TestNodeChangedIgnoresHeartbeats(t *testing.T) {
	old := &corev1.Node{Spec: corev1.NodeSpec{PodCIDRs: []string{"10.244.1.0/24"}}}
	heartbeat := old.DeepCopy()
	heartbeat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, LastHeartbeatTime: metav1.Now()}}
	if nodeChanged(old, heartbeat) {
		t.Error("a heartbeat triggered a sync")
	}
	moved := old.DeepCopy()
	moved.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "172.20.0.99"}}
	if !nodeChanged(old, moved) {
		t.Error("a new node IP did not trigger a sync")
	}
}

// A Service update syncs only when it changes what the engine reads of the Service, as
// kube-proxy's service change tracker decides.
func TestServiceChanged(t *testing.T) {
	base := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: "1", Labels: map[string]string{"app": "web"}},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	checkChanged(t, base, slimService, serviceChanged, []changeCase[*corev1.Service]{
		{"only the resource version", func(*corev1.Service) {}, false},
		{"a label", func(s *corev1.Service) { s.Labels["tier"] = "front" }, false},
		{"the selector", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "web2"} }, false},
		{"an annotation winkernel does not read", func(s *corev1.Service) { s.Annotations = map[string]string{"team": "x"} }, false},
		{"a status condition", func(s *corev1.Service) { s.Status.Conditions = []metav1.Condition{{Type: "Ready"}} }, false},
		{"a port", func(s *corev1.Service) { s.Spec.Ports[0].Port = 81 }, true},
		{"the target port", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(8081) }, true},
		{"an external IP", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"192.0.2.1"} }, true},
		{"an ingress IP", func(s *corev1.Service) {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
		}, true},
		{"the preserve-destination annotation", func(s *corev1.Service) {
			s.Annotations = map[string]string{engine.AnnotationPreserveDestination: "true"}
		}, true},
		{"session affinity", func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }, true},
	})
}

// changeCase is one row of an update handler's table: an update of the table's object, and
// whether it must trigger a sync.
type changeCase[T any] struct {
	name   string
	update func(T)
	// sync says whether the update must trigger one.
	sync bool
}

// checkChanged runs each case's update of base through the informer's transform (slim) and the
// handler's filter (changed).
func checkChanged[T interface {
	metav1.Object
	DeepCopy() T
}](t *testing.T, base T, slim func(any) (any, error), changed func(old, new any) bool, cases []changeCase[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := base.DeepCopy()
			now.SetResourceVersion("2")
			tc.update(now)
			old, _ := slim(base)
			updated, _ := slim(now)
			if got := changed(old, updated); got != tc.sync {
				t.Errorf("sync = %v, want %v", got, tc.sync)
			}
		})
	}
}

// An EndpointSlice update syncs only when it changes what the engine reads of the slice, as
// kube-proxy's endpoints change tracker decides.
func TestSliceChanged(t *testing.T) {
	base := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "ns", ResourceVersion: "1",
			Labels:      map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"},
			Annotations: map[string]string{corev1.EndpointsLastChangeTriggerTime: "2026-12-03T10:00:00Z"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.1.5"}, NodeName: ptr.To("win-1"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"10.244.2.7"}, NodeName: ptr.To("win-2")},
		},
	}
	checkChanged(t, base, slimSlice, sliceChanged, []changeCase[*discoveryv1.EndpointSlice]{
		{"only the resource version", func(*discoveryv1.EndpointSlice) {}, false},
		{"a label copied from the Service", func(s *discoveryv1.EndpointSlice) { s.Labels["helm.sh/chart"] = "web-1.2.0" }, false},
		{"an annotation", func(s *discoveryv1.EndpointSlice) { s.Annotations["team"] = "x" }, false},
		{"the trigger time alone", func(s *discoveryv1.EndpointSlice) {
			s.Annotations[corev1.EndpointsLastChangeTriggerTime] = "2026-12-03T10:05:00Z"
		}, false},
		{"an address", func(s *discoveryv1.EndpointSlice) { s.Endpoints[1].Addresses = []string{"10.244.2.8"} }, true},
		{"a node", func(s *discoveryv1.EndpointSlice) { s.Endpoints[1].NodeName = ptr.To("win-3") }, true},
		{"ready", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Conditions.Ready = ptr.To(false) }, true},
		{"serving", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Conditions.Serving = ptr.To(false) }, true},
		{"terminating", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Conditions.Terminating = ptr.To(true) }, true},
		{"a topology hint", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-a"}}}
		}, true},
		{"a port", func(s *discoveryv1.EndpointSlice) { s.Ports[0].Port = ptr.To[int32](8081) }, true},
		{"the port's protocol", func(s *discoveryv1.EndpointSlice) { s.Ports[0].Protocol = ptr.To(corev1.ProtocolUDP) }, true},
		{"an endpoint more", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.244.3.9"}})
		}, true},
		{"the Service it belongs to", func(s *discoveryv1.EndpointSlice) { s.Labels[discoveryv1.LabelServiceName] = "web2" }, true},
	})
}

func TestSpecOrAliveChangedIgnoresStatusWrites(t *testing.T) {
	old := &v1alpha1.WindowsProxyNode{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	status := old.DeepCopy()
	status.Status.ObservedHash = "h"
	if specOrAliveChanged(old, status) {
		t.Error("the agent's own status write triggered a sync")
	}
	spec := old.DeepCopy()
	spec.Generation = 3
	if !specOrAliveChanged(old, spec) {
		t.Error("a new spec did not trigger a sync")
	}
	// The controller saying the agent was silent, and then that it is back: the agent rewrites
	// its report at once, not at the next periodic sync.
	lost := old.DeepCopy()
	lost.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionAgentAlive, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonHeartbeatLost}}
	back := old.DeepCopy()
	back.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionAgentAlive, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonHeartbeatRenewed}}
	for _, c := range []struct{ from, to *v1alpha1.WindowsProxyNode }{{old, lost}, {lost, back}, {old, back}} {
		if !specOrAliveChanged(c.from, c.to) {
			t.Errorf("AgentAlive %v -> %v did not trigger a sync", c.from.Status.Conditions, c.to.Status.Conditions)
		}
	}
	again := back.DeepCopy()
	again.Status.ObservedHash = "h2"
	if specOrAliveChanged(back, again) {
		t.Error("a status write that left AgentAlive alone triggered a sync")
	}
}
