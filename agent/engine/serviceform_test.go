package engine

import (
	"net/netip"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// ServiceOf reads a Service as the engine read the API's form: one row per field it derives.
func TestServiceOf(t *testing.T) {
	addr := netip.MustParseAddr
	for _, tc := range []struct {
		name string
		// svc is the Service read; its namespace and name are set by the test.
		svc corev1.Service
		// want is what is read, its namespace and name aside.
		want Service
	}{
		{
			name: "a dual-stack ClusterIP Service: the first cluster IP of each family",
			svc: corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10",
				ClusterIPs: []string{"10.96.0.10", "fd00::10", "10.96.0.11", "fd00::11"}}},
			want: Service{Proxied: true, ClusterIPs: [2]netip.Addr{addr("10.96.0.10"), addr("fd00::10")}},
		},
		{
			name: "no clusterIPs: clusterIP is read, an IPv4-mapped one as IPv4",
			svc:  corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "::ffff:10.96.0.10"}},
			want: Service{Proxied: true, ClusterIPs: [2]netip.Addr{addr("10.96.0.10")}},
		},
		{
			name: "a cluster IP that does not parse is none; the Service is still proxied",
			svc:  corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.96.0", ClusterIPs: []string{"10.96.0", "fd00::10"}}},
			want: Service{Proxied: true, ClusterIPs: [2]netip.Addr{{}, addr("fd00::10")}},
		},
		{
			name: "headless: not proxied",
			svc:  corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, ClusterIPs: []string{corev1.ClusterIPNone}}},
			want: Service{},
		},
		{
			name: "ExternalName: not proxied, whatever its cluster IP",
			svc:  corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ClusterIP: "10.96.0.10"}},
			want: Service{ClusterIPs: [2]netip.Addr{addr("10.96.0.10")}},
		},
		{
			name: "policies, affinity, health-check port and the two annotations winkernel reads",
			svc: corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
					AnnotationPreserveDestination: "true", AnnotationWinProxyOptimization: "Disabled"}},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.10",
					ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
					InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyLocal),
					SessionAffinity:       corev1.ServiceAffinityClientIP, HealthCheckNodePort: 30999}},
			want: Service{Proxied: true, LoadBalancer: true, ExternalTrafficLocal: true, InternalTrafficLocal: true,
				ClientIPAffinity: true, PreserveDestination: true, Recreate: true, HealthCheckNodePort: 30999,
				ClusterIPs: [2]netip.Addr{addr("10.96.0.10")}},
		},
		{
			name: "annotations with other values mean nothing",
			svc: corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
					AnnotationPreserveDestination: "True", AnnotationWinProxyOptimization: "off"}},
				Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster)}},
			want: Service{Proxied: true, ClusterIPs: [2]netip.Addr{addr("10.96.0.10")}},
		},
		{
			name: "external IPs that parse, unmapped, in order",
			svc:  corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", ExternalIPs: []string{"fd00::1", "nope", "::ffff:192.0.2.1"}}},
			want: Service{Proxied: true, ClusterIPs: [2]netip.Addr{addr("10.96.0.10")},
				ExternalIPs: []netip.Addr{addr("fd00::1"), addr("192.0.2.1")}},
		},
		{
			name: "ingress IPs in VIP mode (unset or VIP); Proxy mode and hostnames are none",
			svc: corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10"},
				Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
					{IP: "192.0.2.1"},
					{IP: "192.0.2.2", IPMode: ptr.To(corev1.LoadBalancerIPModeProxy)},
					{IP: "192.0.2.3", IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)},
					{Hostname: "lb.example.com"},
					{IP: "127.0.0.1"}, // kept: the computation reports it as no frontend
				}}}},
			want: Service{Proxied: true, ClusterIPs: [2]netip.Addr{addr("10.96.0.10")},
				Ingress: []netip.Addr{addr("192.0.2.1"), addr("192.0.2.3"), addr("127.0.0.1")}},
		},
		{
			name: "ports: protocol TCP when unset, a named target port is 0",
			svc: corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", Ports: []corev1.ServicePort{
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(5353)},
				{Name: "web", Port: 80, NodePort: 30080, TargetPort: intstr.FromString("http")},
				{Name: "other", Protocol: "QUIC", Port: 443, TargetPort: intstr.FromInt32(8443)},
			}}},
			want: Service{Proxied: true, ClusterIPs: [2]netip.Addr{addr("10.96.0.10")}, Ports: []ServicePort{
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: 5353},
				{Name: "web", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080},
				{Name: "other", Protocol: "QUIC", Port: 443, TargetPort: 8443},
			}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.svc.Namespace, tc.svc.Name = "ns", "svc"
			tc.want.Namespace, tc.want.Name = "ns", "svc"
			got := ServiceOf(&tc.svc)
			if diff := cmp.Diff(&tc.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("ServiceOf (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(got, got.DeepCopy(), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("DeepCopy (-orig +copy):\n%s", diff)
			}
		})
	}
}

// A decoded Service's protocol is a string of its own; the form holds the package's constant, so
// that the cache holds no copy of "TCP" per port.
func TestServiceOfSharesKnownProtocols(t *testing.T) {
	decoded := corev1.Protocol([]byte("TCP"))
	got := ServiceOf(&corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Protocol: decoded}}}}).Ports[0].Protocol
	if unsafe.StringData(string(got)) != unsafe.StringData(string(corev1.ProtocolTCP)) {
		t.Errorf("protocol %q is a copy, not the constant", got)
	}
}
