package fleet

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Namespace holds the sample workloads.
const Namespace = "shop"

// Pod is one backend of a sample service: an IP in its node's pod CIDR.
type Pod struct {
	Node string
	IP   string
}

// Workload is a sample Service and the pods behind it, of the kinds Windows nodes must proxy.
type Workload struct {
	Service *corev1.Service
	// IngressIPs are set on status.loadBalancer, as a cloud controller would.
	IngressIPs []string
	Pods       []Pod
	// TargetPort is the port the pods listen on.
	TargetPort int32
}

func service(name string, mutate func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{"app": name}},
	}
	mutate(s)
	return s
}

func tcp(name string, port, target int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(target)}
}

// Workloads returns the sample services: ClusterIP, NodePort, LoadBalancer with
// externalTrafficPolicy Local, externalIPs, ClientIP affinity, UDP, and two kinds a Windows proxy
// must ignore (headless and ExternalName). Their pods are spread over every node, Linux included.
func Workloads() []Workload {
	return []Workload{
		{
			Service: service("web", func(s *corev1.Service) {
				s.Spec.ClusterIP = "10.0.0.100"
				s.Spec.Ports = []corev1.ServicePort{tcp("http", 80, 8080)}
			}),
			TargetPort: 8080,
			Pods:       []Pod{{"win-2019", "10.244.1.5"}, {"win-2022", "10.244.2.5"}, {"win-2025", "10.244.3.5"}, {"linux-1", "10.244.0.5"}},
		},
		{
			Service: service("api", func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeNodePort
				s.Spec.ClusterIP = "10.0.0.101"
				p := tcp("https", 443, 8443)
				p.NodePort = 30443
				s.Spec.Ports = []corev1.ServicePort{p}
			}),
			TargetPort: 8443,
			Pods:       []Pod{{"win-2022", "10.244.2.6"}, {"win-2025", "10.244.3.6"}},
		},
		{
			Service: service("storefront", func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeLoadBalancer
				s.Spec.ClusterIP = "10.0.0.102"
				s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
				s.Spec.HealthCheckNodePort = 32000
				p := tcp("http", 80, 8080)
				p.NodePort = 30080
				s.Spec.Ports = []corev1.ServicePort{p}
			}),
			IngressIPs: []string{"20.0.0.10"},
			TargetPort: 8080,
			Pods:       []Pod{{"win-2019", "10.244.1.7"}, {"win-2022", "10.244.2.7"}, {"win-2025", "10.244.3.7"}},
		},
		{
			Service: service("legacy", func(s *corev1.Service) {
				s.Spec.ClusterIP = "10.0.0.103"
				s.Spec.ExternalIPs = []string{"20.0.0.20"}
				s.Spec.Ports = []corev1.ServicePort{tcp("http", 8080, 80)}
			}),
			TargetPort: 80,
			Pods:       []Pod{{"linux-1", "10.244.0.8"}, {"win-2025", "10.244.3.8"}},
		},
		{
			Service: service("cart", func(s *corev1.Service) {
				s.Spec.ClusterIP = "10.0.0.104"
				s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
				s.Spec.Ports = []corev1.ServicePort{tcp("redis", 6379, 6379)}
			}),
			TargetPort: 6379,
			Pods:       []Pod{{"win-2019", "10.244.1.9"}, {"win-2022", "10.244.2.9"}},
		},
		{
			Service: service("dns", func(s *corev1.Service) {
				s.Spec.ClusterIP = "10.0.0.105"
				s.Spec.Ports = []corev1.ServicePort{{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(5353)}}
			}),
			TargetPort: 5353,
			Pods:       []Pod{{"linux-1", "10.244.0.10"}, {"win-2025", "10.244.3.10"}},
		},
		{
			Service: service("db", func(s *corev1.Service) {
				s.Spec.ClusterIP = corev1.ClusterIPNone
				s.Spec.Ports = []corev1.ServicePort{tcp("pg", 5432, 5432)}
			}),
			TargetPort: 5432,
			Pods:       []Pod{{"win-2022", "10.244.2.11"}},
		},
		{
			Service: service("search", func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeExternalName
				s.Spec.ExternalName = "search.example.com"
				s.Spec.Selector = nil
			}),
		},
	}
}

// SliceName is the name of a workload's EndpointSlice.
func SliceName(service string) string { return service + "-sample" }

// EndpointSlice returns the EndpointSlice of the workload's pods, all ready, as the EndpointSlice
// controller would publish it.
func (w Workload) EndpointSlice() *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: SliceName(w.Service.Name), Namespace: Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: w.Service.Name, discoveryv1.LabelManagedBy: "fleet.winproxy.io"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, p := range w.Service.Spec.Ports {
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptr.To(p.Name), Protocol: ptr.To(p.Protocol), Port: ptr.To(w.TargetPort)})
	}
	for _, p := range w.Pods {
		s.Endpoints = append(s.Endpoints, Endpoint(p))
	}
	return s
}

// Endpoint returns the ready EndpointSlice endpoint of a pod.
func Endpoint(p Pod) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{
		Addresses:  []string{p.IP},
		NodeName:   ptr.To(p.Node),
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
	}
}

// CreateWorkloads creates the namespace, the services (with load-balancer status) and their
// EndpointSlices. Existing objects are left as they are.
func CreateWorkloads(ctx context.Context, c client.Client) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	for _, w := range Workloads() {
		svc := w.Service.DeepCopy()
		if err := c.Create(ctx, svc); err != nil {
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			return fmt.Errorf("creating service %s: %w", svc.Name, err)
		}
		if len(w.IngressIPs) > 0 {
			for _, ip := range w.IngressIPs {
				svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
			}
			if err := c.Status().Update(ctx, svc); err != nil {
				return fmt.Errorf("setting the load-balancer status of service %s: %w", svc.Name, err)
			}
		}
		if len(w.Pods) == 0 {
			continue
		}
		if err := c.Create(ctx, w.EndpointSlice()); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the EndpointSlice of service %s: %w", svc.Name, err)
		}
	}
	return nil
}
