package hns

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// NetworkType is the HNS network type string as HNS reports it.
type NetworkType string

// Network types known to HCN. winkernel only distinguishes overlay from
// everything else; the rest are kept so reports show what HNS said.
const (
	NetworkTypeL2Bridge    NetworkType = "L2Bridge"
	NetworkTypeOverlay     NetworkType = "Overlay"
	NetworkTypeNAT         NetworkType = "NAT"
	NetworkTypeTransparent NetworkType = "Transparent"
	NetworkTypeL2Tunnel    NetworkType = "L2Tunnel"
	NetworkTypeICS         NetworkType = "ICS"
	NetworkTypePrivate     NetworkType = "Private"
)

// IsOverlay compares case-insensitively because winkernel's constant is
// "overlay" while HNS reports "Overlay"; both must mean VXLAN mode.
func (t NetworkType) IsOverlay() bool {
	return strings.EqualFold(string(t), string(NetworkTypeOverlay))
}

// Network is an HNS network. Only the fields a service proxy reads are kept.
type Network struct {
	ID                 string              `json:"id"`
	Name               string              `json:"name"`
	Type               NetworkType         `json:"type"`
	RemoteSubnetRoutes []RemoteSubnetRoute `json:"remoteSubnetRoutes,omitempty"`
}

// IsOverlay reports whether the network is VXLAN (overlay) mode.
func (n Network) IsOverlay() bool { return n.Type.IsOverlay() }

// RemoteSubnetRoute is an overlay network's route to another node's pod
// CIDR; its ProviderAddress is what remote endpoints in that CIDR need as
// their PA policy.
type RemoteSubnetRoute struct {
	DestinationPrefix    netip.Prefix `json:"destinationPrefix"`
	ProviderAddress      netip.Addr   `json:"providerAddress"`
	IsolationID          uint16       `json:"isolationID,omitempty"`
	DistributedRouterMAC string       `json:"distributedRouterMAC,omitempty"`
}

// Endpoint is an HNS endpoint. Local endpoints are pod vNICs created by the
// CNI; remote endpoints are created by the proxy for backends on other nodes.
type Endpoint struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	NetworkID string `json:"networkID,omitempty"`
	// IPs holds at most one IPv4 and one IPv6 address (HNS IP configurations).
	IPs []netip.Addr `json:"ips,omitempty"`
	// PrefixLength belongs to the first IP; HNS keeps one per IP configuration
	// but the proxy never relies on it (remote endpoints carry none).
	PrefixLength uint8  `json:"prefixLength,omitempty"`
	MAC          string `json:"mac,omitempty"`
	// Remote is the HNS remote-endpoint flag: the only thing that tells a
	// backend on another node apart from a local pod.
	Remote bool `json:"remote,omitempty"`
	// ProviderAddress is the PA policy of an overlay remote endpoint (the
	// node that hosts the IP); invalid (zero) means no PA policy.
	ProviderAddress netip.Addr `json:"providerAddress,omitzero"`
}

// HasIP reports whether ip is one of the endpoint's addresses.
func (e Endpoint) HasIP(ip netip.Addr) bool { return slices.Contains(e.IPs, ip) }

func (e Endpoint) String() string {
	kind := "local"
	if e.Remote {
		kind = "remote"
	}
	s := fmt.Sprintf("%s %s name=%q ips=%v mac=%s", e.ID, kind, e.Name, e.IPs, e.MAC)
	if e.ProviderAddress.IsValid() {
		s += " pa=" + e.ProviderAddress.String()
	}
	return s
}

// Protocol numbers HNS uses in port mappings (IANA protocol numbers).
const (
	ProtocolTCP  uint32 = 6
	ProtocolUDP  uint32 = 17
	ProtocolSCTP uint32 = 132
)

// DistributionType selects how HNS spreads connections over backends.
type DistributionType uint32

const (
	// DistributionNone distributes per connection.
	DistributionNone DistributionType = 0
	// DistributionSourceIPProtocol keeps a client on one backend per protocol.
	DistributionSourceIPProtocol DistributionType = 1
	// DistributionSourceIP keeps a client on one backend (Service
	// sessionAffinity: ClientIP; HNS has no timeout).
	DistributionSourceIP DistributionType = 2
)

// PortMappingFlags are the flags of an HNS port mapping.
type PortMappingFlags uint32

const (
	PortMappingILB            PortMappingFlags = 1
	PortMappingLocalRoutedVIP PortMappingFlags = 2  // NodePort: reachable from the host itself
	PortMappingUseMux         PortMappingFlags = 4  // DSR for NodePort access of the VIP
	PortMappingPreserveDIP    PortMappingFlags = 8  // deliver with destination = VIP
	PortMappingVipExternalIP  PortMappingFlags = 16 // winkernel's own constant, absent from hcsshim
)

// LBFlags are the load-balancer-level flags.
type LBFlags uint32

const (
	LBFlagDSR  LBFlags = 1
	LBFlagIPv6 LBFlags = 2
)

// PortMapping is the one port mapping a proxy LB carries.
type PortMapping struct {
	Protocol         uint32           `json:"protocol"`
	InternalPort     uint16           `json:"internalPort"`
	ExternalPort     uint16           `json:"externalPort"`
	DistributionType DistributionType `json:"distributionType,omitempty"`
	Flags            PortMappingFlags `json:"flags,omitempty"`
}

// LoadBalancer is an HNS load balancer ("policy"). HNS allows several port
// mappings, but winkernel and winproxy always program exactly one; a foreign
// LB read from HNS keeps its first mapping only (zero if it had none).
type LoadBalancer struct {
	ID string `json:"id,omitempty"`
	// FrontendVIPs has 0 (NodePort: all host addresses) or 1 address.
	FrontendVIPs       []netip.Addr `json:"frontendVIPs,omitempty"`
	PortMapping        PortMapping  `json:"portMapping"`
	Flags              LBFlags      `json:"flags,omitempty"`
	SourceVIP          netip.Addr   `json:"sourceVIP,omitzero"`
	BackendEndpointIDs []string     `json:"backendEndpointIDs,omitempty"`
}

// VIP returns the first frontend VIP, or the zero Addr for a NodePort LB.
func (lb LoadBalancer) VIP() netip.Addr {
	if len(lb.FrontendVIPs) == 0 {
		return netip.Addr{}
	}
	return lb.FrontendVIPs[0]
}

// IsIPv6 reports the LB's IPv6 flag.
func (lb LoadBalancer) IsIPv6() bool { return lb.Flags&LBFlagIPv6 != 0 }

// IsDSR reports the LB's DSR flag.
func (lb LoadBalancer) IsDSR() bool { return lb.Flags&LBFlagDSR != 0 }

// Frontend is the tuple HNS refuses to have twice (port already exists);
// winkernel uses the same tuple to find the LB blocking a create. It is
// winproxy's one frontend type: the engine's collision key and the
// applier's match of its own load balancers are a Frontend without the
// internal port (WithoutInternalPort), each saying why.
type Frontend struct {
	VIP          netip.Addr
	Protocol     uint32
	InternalPort uint16
	ExternalPort uint16
	IPv6         bool
}

// Frontend returns the LB's frontend tuple.
func (lb LoadBalancer) Frontend() Frontend {
	return Frontend{
		VIP:          lb.VIP(),
		Protocol:     lb.PortMapping.Protocol,
		InternalPort: lb.PortMapping.InternalPort,
		ExternalPort: lb.PortMapping.ExternalPort,
		IPv6:         lb.IsIPv6(),
	}
}

// WithoutInternalPort is f with the internal port zero: the part of the
// frontend a client's packet carries (address, protocol, port, family).
func (f Frontend) WithoutInternalPort() Frontend {
	f.InternalPort = 0
	return f
}

func (f Frontend) String() string {
	vip := "*"
	if f.VIP.IsValid() {
		vip = f.VIP.String()
	}
	fam := "v4"
	if f.IPv6 {
		fam = "v6"
	}
	return fmt.Sprintf("%s/%s:%d->%d(%s)", ProtocolName(f.Protocol), vip, f.ExternalPort, f.InternalPort, fam)
}

func (lb LoadBalancer) String() string {
	s := fmt.Sprintf("%s %s backends=%d", lb.ID, lb.Frontend(), len(lb.BackendEndpointIDs))
	if lb.IsDSR() {
		s += " dsr"
	}
	if lb.SourceVIP.IsValid() {
		s += " svip=" + lb.SourceVIP.String()
	}
	if lb.PortMapping.Flags != 0 {
		s += fmt.Sprintf(" pmflags=%d", lb.PortMapping.Flags)
	}
	if lb.PortMapping.DistributionType != DistributionNone {
		s += fmt.Sprintf(" dist=%d", lb.PortMapping.DistributionType)
	}
	return s
}

// ProtocolName renders an HNS protocol number for humans.
func ProtocolName(p uint32) string {
	switch p {
	case ProtocolTCP:
		return "TCP"
	case ProtocolUDP:
		return "UDP"
	case ProtocolSCTP:
		return "SCTP"
	}
	return fmt.Sprintf("proto%d", p)
}
