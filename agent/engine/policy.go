package engine

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// Service annotations winkernel reads (docs/design/dataplane.md#annotations).
const (
	AnnotationPreserveDestination  = "preserve-destination"
	AnnotationWinProxyOptimization = "winProxyOptimization"
)

// servicePolicy is what a service asks of all its load balancers, as this
// node can carry it out (docs/design/dataplane.md#the-three-dsr-switches).
type servicePolicy struct {
	// internalLocal is internalTrafficPolicy: Local: ClusterIP LBs use
	// local backends only.
	internalLocal bool
	// localTrafficDSR is externalTrafficPolicy: Local on an HNS with DSR:
	// NodePort, external-IP and ingress LBs use local backends and DSR.
	// Without HNS DSR the policy is not honoured at all.
	localTrafficDSR bool
	// preserveDestination is the preserve-destination annotation on an HNS
	// with DSR: ingress LBs keep the destination (DSR, UseMux,
	// PreserveDIP) and, like NodePort LBs, use local backends.
	preserveDestination bool
	// clusterIPDSR is the node's DSR on ClusterIP LBs (dsr.enabled).
	clusterIPDSR bool
	// distribution is ClientIP session affinity, where HNS has it.
	distribution hns.DistributionType
	// recreate is winProxyOptimization: disabled: a changed LB is deleted
	// and created instead of modified.
	recreate bool
	// healthPort is the health-check LBs' port: the service's
	// healthCheckNodePort, else kube-proxy's healthz port.
	healthPort uint16
}

// readPolicy reads the service's policy, and reports what this node cannot
// do as asked.
func (s *serviceComputer) readPolicy(svc *Service) servicePolicy {
	c := s.c
	p := servicePolicy{
		internalLocal:       svc.InternalTrafficLocal,
		localTrafficDSR:     svc.ExternalTrafficLocal && c.caps.DSR,
		preserveDestination: svc.PreserveDestination && c.caps.DSR,
		clusterIPDSR:        c.dsrActive,
		distribution:        hns.DistributionNone,
		recreate:            svc.Recreate,
		healthPort:          c.healthPort,
	}
	if svc.ExternalTrafficLocal && !c.caps.DSR {
		s.report(v1alpha1.ReasonExternalTrafficPolicyLocalNotHonoured, "externalTrafficPolicy: Local needs HNS DSR support, which this host lacks; external load balancers use every backend")
	}
	if svc.ClientIPAffinity {
		if c.caps.SessionAffinity {
			p.distribution = hns.DistributionSourceIP
		} else {
			s.report(v1alpha1.ReasonSessionAffinityUnsupported, "sessionAffinity: ClientIP needs HNS 12.0 (Windows Server 2022); connections are spread without affinity")
		}
	}
	if svc.HealthCheckNodePort != 0 {
		p.healthPort = uint16(svc.HealthCheckNodePort)
	}
	return p
}

// The predicates the table of LB kinds (lbKinds) chooses backends and the
// DSR flag with.

func never(*servicePolicy) bool { return false }

func internalTrafficLocal(p *servicePolicy) bool { return p.internalLocal }

func clusterIPDSR(p *servicePolicy) bool { return p.clusterIPDSR }

func localTrafficDSR(p *servicePolicy) bool { return p.localTrafficDSR }

func localTrafficOrPreserveDestination(p *servicePolicy) bool {
	return p.localTrafficDSR || p.preserveDestination
}

// addrsOf are the addresses of the family among ips.
func addrsOf(ips []netip.Addr, fam v1alpha1.IPFamily) []netip.Addr {
	var out []netip.Addr
	for _, ip := range ips {
		if familyOf(ip) == fam {
			out = append(out, ip)
		}
	}
	return out
}

// ingressIPs are the load-balancer ingress IPs of the family in VIP mode;
// ipMode: Proxy means the cloud LB proxies, so the node must not. An
// address that is no unicast address (0.0.0.0, 127.0.0.1, 224.0.0.1,
// fe80::1: the apiserver accepts any IP in services/status) is no
// frontend: it is skipped and reported, where winkernel programs it
// (docs/design/dataplane.md#load-balancers).
func (s *serviceComputer) ingressIPs(svc *Service, fam v1alpha1.IPFamily) []netip.Addr {
	var out []netip.Addr
	for _, ip := range svc.Ingress {
		if familyOf(ip) != fam {
			continue
		}
		if !ip.IsGlobalUnicast() {
			s.report(v1alpha1.ReasonIngressIPUnusable, "load-balancer ingress IP %s is not a unicast address (unspecified, loopback, multicast, link-local or broadcast); no load balancer is programmed for it", ip)
			continue
		}
		out = append(out, ip)
	}
	return out
}

// protocols are the API's protocols with HNS's numbers for them.
var protocols = [...]struct {
	name   corev1.Protocol
	number uint32
}{
	{corev1.ProtocolTCP, hns.ProtocolTCP},
	{corev1.ProtocolUDP, hns.ProtocolUDP},
	{corev1.ProtocolSCTP, hns.ProtocolSCTP},
}

// protocolNumber is HNS's number for p (TCP when unset), 0 for a protocol HNS does not know.
func protocolNumber(p corev1.Protocol) uint32 {
	if p == "" {
		p = corev1.ProtocolTCP
	}
	for _, known := range protocols {
		if known.name == p {
			return known.number
		}
	}
	return 0
}
