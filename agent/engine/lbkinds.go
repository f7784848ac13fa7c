package engine

import (
	"net/netip"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// lbKind is one row of the table of load-balancer kinds
// (docs/design/dataplane.md#load-balancers, winkernel's proxier.go
// syncProxyRules): for one service port in one family, which frontends get
// a load balancer, with which ports, backends and flags, and when. Every
// kind needs at least one backend of the port, and every load balancer of
// the port has the port's source VIP and the IPv6 flag in the IPv6 family.
type lbKind struct {
	kind Kind
	// frontends are the VIPs; the zero Addr is "every host address"
	// (NodePort).
	frontends func(p *portPlan) []netip.Addr
	// externalPort and internalPort are the port mapping's ports.
	externalPort, internalPort func(p *portPlan) uint16
	// localOnly restricts the backends to the port's local ones.
	localOnly func(*servicePolicy) bool
	// root makes the host's root endpoint the only backend.
	root bool
	// dsr sets the DSR flag.
	dsr func(*servicePolicy) bool
	// portMapping are the port-mapping flags; preserveDestination adds
	// its own with the preserve-destination annotation.
	portMapping, preserveDestination hns.PortMappingFlags
	// affinity: the service's session affinity applies.
	affinity bool
	// needsAvailable: created only while an endpoint is available for
	// external load balancers (not all terminating or not serving; winkernel's
	// endpointsAvailableForLB), so that a cloud load balancer's health
	// check drains the node.
	needsAvailable bool
	// shared: the LB belongs to no one service port; services with the
	// same ingress IP share it.
	shared bool
}

const (
	vipExternal       = hns.PortMappingVipExternalIP
	nodePortMapping   = hns.PortMappingVipExternalIP | hns.PortMappingLocalRoutedVIP
	keepDestination   = hns.PortMappingUseMux | hns.PortMappingPreserveDIP
	noPortMappingFlag = hns.PortMappingFlags(0)
)

// lbKinds is the table, in winkernel's order of programming.
var lbKinds = [...]lbKind{
	{kind: KindClusterIP, frontends: clusterIPFrontend, externalPort: servicePortNumber, internalPort: targetPortNumber,
		localOnly: internalTrafficLocal, dsr: clusterIPDSR, portMapping: noPortMappingFlag, affinity: true},
	{kind: KindNodePort, frontends: nodePortFrontend, externalPort: nodePortNumber, internalPort: targetPortNumber,
		localOnly: localTrafficOrPreserveDestination, dsr: localTrafficDSR, portMapping: nodePortMapping, affinity: true, needsAvailable: true},
	{kind: KindExternalIP, frontends: externalIPFrontends, externalPort: servicePortNumber, internalPort: targetPortNumber,
		localOnly: localTrafficDSR, dsr: localTrafficDSR, portMapping: vipExternal, affinity: true, needsAvailable: true},
	{kind: KindIngress, frontends: ingressFrontends, externalPort: servicePortNumber, internalPort: targetPortNumber,
		localOnly: localTrafficOrPreserveDestination, dsr: localTrafficOrPreserveDestination, portMapping: vipExternal, preserveDestination: keepDestination, affinity: true},
	// winkernel leaves the IPv6 flag out on the IPv6 proxier's health-check
	// LBs, which HNS refuses with an IPv6 VIP; they carry it here (a
	// deliberate difference, docs/differences-from-kube-proxy.md).
	{kind: KindHealthCheck, frontends: ingressFrontends, externalPort: healthPortNumber, internalPort: healthPortNumber,
		root: true, dsr: never, portMapping: noPortMappingFlag, preserveDestination: keepDestination, needsAvailable: true, shared: true},
}

// portPlan is one service port in one family: its frontends and the
// backends selected for it.
type portPlan struct {
	family    v1alpha1.IPFamily
	port      ServicePort
	protocol  uint32
	clusterIP [1]netip.Addr
	// noVIP is the NodePort LB's frontend: every host address.
	noVIP       [1]netip.Addr
	externalIPs []netip.Addr
	ingress     []netip.Addr
	// root is the health-check LBs' backend, if any.
	root   []Backend
	policy *servicePolicy
	backendSelection
}

func clusterIPFrontend(p *portPlan) []netip.Addr { return p.clusterIP[:] }

func nodePortFrontend(p *portPlan) []netip.Addr {
	if p.port.NodePort > 0 {
		return p.noVIP[:]
	}
	return nil
}

func externalIPFrontends(p *portPlan) []netip.Addr { return p.externalIPs }

func ingressFrontends(p *portPlan) []netip.Addr { return p.ingress }

func servicePortNumber(p *portPlan) uint16 { return uint16(p.port.Port) }

func nodePortNumber(p *portPlan) uint16 { return uint16(p.port.NodePort) }

func targetPortNumber(p *portPlan) uint16 { return p.targetPort }

func healthPortNumber(p *portPlan) uint16 { return p.policy.healthPort }

// backends are the kind's backends among the port's.
func (k *lbKind) backends(p *portPlan) []Backend {
	switch {
	case k.root:
		return p.root
	case k.localOnly(p.policy):
		return p.local
	}
	return p.all
}

// loadBalancers appends the kind's load balancers of the port to lbs.
func (k *lbKind) loadBalancers(lbs []LoadBalancer, service string, p *portPlan) []LoadBalancer {
	if k.needsAvailable && !p.availableForLB {
		return lbs
	}
	backends := k.backends(p)
	if len(backends) == 0 {
		return lbs
	}
	var flags hns.LBFlags
	if k.dsr(p.policy) {
		flags |= hns.LBFlagDSR
	}
	if p.family == v1alpha1.IPv6 {
		flags |= hns.LBFlagIPv6
	}
	pm := k.portMapping
	if p.policy.preserveDestination {
		pm |= k.preserveDestination
	}
	dist := hns.DistributionNone
	if k.affinity {
		dist = p.policy.distribution
	}
	key := LBKey{Family: FamilyOf(p.family), Kind: k.kind, Service: service, Port: p.port.Name, Protocol: p.protocol, ExternalPort: k.externalPort(p)}
	if k.shared {
		key.Service, key.Port = "", ""
	}
	for _, vip := range k.frontends(p) {
		key.VIP = vip
		lbs = append(lbs, LoadBalancer{Key: key, InternalPort: k.internalPort(p), Flags: flags, PortMappingFlags: pm,
			Distribution: dist, SourceVIP: p.sourceVIP, Backends: backends, Recreate: p.policy.recreate})
	}
	return lbs
}
