package conformance

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// The describe functions render a cluster for people: one line per node
// setting, service, slice and change, so that a failure can be read without
// decoding JSON.

func describeNode(c *Cluster) string {
	var b strings.Builder
	fmt.Fprintf(&b, "node %s %v, HNS %s %+v, network %s %s", c.NodeName, c.NodeIPs, c.HNSVersion, c.Features, c.Network.Type, c.Network.Name)
	for _, r := range c.Network.Routes {
		fmt.Fprintf(&b, " route %s->%s", r.Prefix, r.ProviderAddress)
	}
	fmt.Fprintf(&b, "\n  zone %q, families %v, enableDSR %v", c.Zone, c.Families, c.EnableDSR)
	if c.SourceVIP != "" {
		fmt.Fprintf(&b, ", sourceVIP %s", c.SourceVIP)
		if c.SourceVIPEndpoint != "" {
			fmt.Fprintf(&b, " (endpoint %s)", c.SourceVIPEndpoint)
		}
	}
	if c.ForwardHealthCheckVIP {
		fmt.Fprintf(&b, ", forwardHealthCheckVIP to %q, healthz port %d", c.RootEndpointName, c.HealthzPort)
	}
	for _, ep := range c.Endpoints {
		fmt.Fprintf(&b, "\n  HNS endpoint %s %v", ep.Name, ep.IPs)
	}
	return b.String()
}

func describeService(svc *corev1.Service) string {
	s := svc.Spec
	var b strings.Builder
	fmt.Fprintf(&b, "service %s/%s %s", svc.Namespace, svc.Name, s.Type)
	if s.Type == corev1.ServiceTypeExternalName {
		return b.String()
	}
	fmt.Fprintf(&b, " %v", s.ClusterIPs)
	for _, p := range s.Ports {
		fmt.Fprintf(&b, " [%s %s %d->%s", p.Name, p.Protocol, p.Port, p.TargetPort.String())
		if p.NodePort != 0 {
			fmt.Fprintf(&b, " np %d", p.NodePort)
		}
		b.WriteString("]")
	}
	if s.ExternalTrafficPolicy != "" {
		fmt.Fprintf(&b, " etp=%s", s.ExternalTrafficPolicy)
	}
	if s.InternalTrafficPolicy != nil && *s.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal {
		b.WriteString(" itp=Local")
	}
	if s.HealthCheckNodePort != 0 {
		fmt.Fprintf(&b, " hcnp=%d", s.HealthCheckNodePort)
	}
	if s.SessionAffinity == corev1.ServiceAffinityClientIP {
		b.WriteString(" affinity=ClientIP")
	}
	if len(s.ExternalIPs) > 0 {
		fmt.Fprintf(&b, " externalIPs=%v", s.ExternalIPs)
	}
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		fmt.Fprintf(&b, " ingress=%s", ing.IP)
		if ing.IPMode != nil {
			fmt.Fprintf(&b, "(%s)", *ing.IPMode)
		}
	}
	for k, v := range svc.Annotations {
		fmt.Fprintf(&b, " %s=%s", k, v)
	}
	return b.String()
}

func describeSlice(sl *discoveryv1.EndpointSlice) string {
	var b strings.Builder
	fmt.Fprintf(&b, "slice %s/%s (%s)", sl.Namespace, sl.Name, sl.Labels[discoveryv1.LabelServiceName])
	for _, p := range sl.Ports {
		fmt.Fprintf(&b, " %s/%s=%d", deref(p.Name), deref(p.Protocol), deref(p.Port))
	}
	b.WriteString(":")
	for _, e := range sl.Endpoints {
		node := "-"
		if e.NodeName != nil {
			node = *e.NodeName
		}
		fmt.Fprintf(&b, " %s@%s", strings.Join(e.Addresses, ","), node)
		c := e.Conditions
		b.WriteString("(" + cond("r", c.Ready) + cond("s", c.Serving) + cond("t", c.Terminating) + ")")
		if h := e.Hints; h != nil {
			var names []string
			for _, z := range h.ForZones {
				names = append(names, z.Name)
			}
			for _, n := range h.ForNodes {
				names = append(names, n.Name)
			}
			b.WriteString("[for " + strings.Join(names, ",") + "]")
		}
	}
	return b.String()
}

func cond(name string, v *bool) string {
	switch {
	case v == nil:
		return "?" + name
	case *v:
		return "+" + name
	}
	return "-" + name
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func describeStep(s *Step) string {
	var lines []string
	if s.Restart {
		lines = append(lines, "proxy restarts (after the changes below)")
	}
	for _, n := range s.RemoveEndpoints {
		lines = append(lines, "CNI deletes HNS endpoint "+n)
	}
	for _, ep := range s.AddEndpoints {
		lines = append(lines, fmt.Sprintf("CNI creates HNS endpoint %s %v", ep.Name, ep.IPs))
	}
	for _, svc := range s.Services {
		lines = append(lines, "upsert "+describeService(svc))
	}
	for _, k := range s.DeleteServices {
		lines = append(lines, "delete service "+k)
	}
	for _, sl := range s.Slices {
		lines = append(lines, "upsert "+describeSlice(sl))
	}
	for _, k := range s.DeleteSlices {
		lines = append(lines, "delete slice "+k)
	}
	return "  " + strings.Join(lines, "\n  ")
}

// describeCluster renders the whole scenario.
func describeCluster(c *Cluster) string {
	var b strings.Builder
	b.WriteString(describeNode(c))
	for i := range c.Steps {
		fmt.Fprintf(&b, "\nstep %d:\n%s", i, describeStep(&c.Steps[i]))
	}
	return b.String()
}
