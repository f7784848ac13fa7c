package testbuild

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

// The builders are the fixtures of many tests: these pin the objects they build, so that a change
// to a builder shows here first and not as a puzzling failure elsewhere.

func TestNode(t *testing.T) {
	got := Node("win-1", Kubelet("v1.34.1"), PodCIDRs("10.244.1.0/24"), InternalIPs("10.0.0.11"),
		Labels(map[string]string{"pool": "a"}), Annotations(map[string]string{v1alpha1.SourceVIPAnnotation: "10.244.1.2"}))
	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "win-1", Labels: map[string]string{v1alpha1.OSLabel: "windows", "pool": "a"},
			Annotations: map[string]string{v1alpha1.SourceVIPAnnotation: "10.244.1.2"}},
		Spec: corev1.NodeSpec{PodCIDRs: []string{"10.244.1.0/24"}},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.34.1"},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.11"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Node (-want,+got):\n%s", diff)
	}
	if l := Node("l", OS("linux")).Labels; l[v1alpha1.OSLabel] != "linux" {
		t.Errorf("OS(linux): labels %v", l)
	}
	if l := Node("u", OS("")).Labels; len(l) != 0 {
		t.Errorf("OS(\"\"): labels %v, want none", l)
	}
}

func TestServiceAndSlice(t *testing.T) {
	svc := Service("ns", "svc1", ClusterIPs("10.20.30.41", "fd00::41"), TCPPort("p80", 80, intstr.FromInt32(8080)), LoadBalancer(3001, "11.21.31.41"), ExternalTrafficLocal())
	wantSvc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc1"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.20.30.41", ClusterIPs: []string{"10.20.30.41", "fd00::41"},
			Ports:                 []corev1.ServicePort{{Name: "p80", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080), NodePort: 3001}},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "11.21.31.41"}}}},
	}
	if diff := cmp.Diff(wantSvc, svc); diff != "" {
		t.Errorf("Service (-want,+got):\n%s", diff)
	}
	slice := EndpointSlice("ns", "svc1", "svc1-a", SliceTCPPort("p80", 8080), Endpoint("10.244.1.5", "win-1"), Endpoint("10.244.2.5", "win-2", Ready(false), Terminating(true)))
	wantSlice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "svc1-a", Labels: map[string]string{discoveryv1.LabelServiceName: "svc1"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("p80"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.1.5"}, NodeName: ptr.To("win-1")},
			{Addresses: []string{"10.244.2.5"}, NodeName: ptr.To("win-2"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false), Terminating: ptr.To(true)}},
		},
	}
	if diff := cmp.Diff(wantSlice, slice); diff != "" {
		t.Errorf("EndpointSlice (-want,+got):\n%s", diff)
	}
}

func TestConditions(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want discoveryv1.EndpointConditions
	}{
		{"", discoveryv1.EndpointConditions{}},
		{"-r", discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
		{"-r+s+t", discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)}},
		{"+r-s-t", discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(false), Terminating: ptr.To(false)}},
	} {
		var e discoveryv1.Endpoint
		Conditions(tc.in)(&e)
		if diff := cmp.Diff(tc.want, e.Conditions); diff != "" {
			t.Errorf("Conditions(%q) (-want,+got):\n%s", tc.in, diff)
		}
	}
	for _, bad := range []string{"r", "+x", "*r", "-r+"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Conditions(%q) did not panic", bad)
				}
			}()
			Conditions(bad)
		}()
	}
}

func TestConfig(t *testing.T) {
	got := Spec(Selecting(map[string]string{"pool": "a"}), DSR(), Defaulted())
	want := &v1alpha1.WindowsProxyConfigSpec{
		Network:      v1alpha1.NetworkSpec{Name: "cbr0", Type: v1alpha1.NetworkTypeL2Bridge},
		NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}},
		DSR:          v1alpha1.DSRSpec{Enabled: true},
		HealthCheck:  v1alpha1.HealthCheckSpec{RootEndpointName: "cbr0", Port: 10256},
		Sync:         v1alpha1.SyncSpec{PeriodSeconds: 30, MinPeriodSeconds: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Spec (-want,+got):\n%s", diff)
	}
}
