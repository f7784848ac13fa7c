// Package engine computes the HNS state a Windows node should have — load
// balancers, remote endpoints and the overlay source-VIP endpoint — from
// Kubernetes objects, the node's resolved WindowsProxyNode config and what
// HNS reports about the network. It follows winkernel rule for rule
// (docs/design/dataplane.md#the-node through #remote-endpoints), and
// reports what is in effect (DSR, IP families, source VIP) and per-service
// problems.
//
// The engine does no I/O and reads no clock: the same inputs always give the
// same Desired. Compute is the whole function; Incremental is the same function
// made incremental, recomputing only the services whose inputs changed.
package engine

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// HNSView is what HNS reported about the host, gathered by the caller.
type HNSView struct {
	// Found is false when no network has the configured name.
	Found bool
	// Network is the network with the configured name (ID, type, remote
	// subnet routes).
	Network hns.Network
	// Endpoints are the endpoints of the network. The engine uses the local
	// ones (pods, the host's root endpoint, the source-VIP endpoint); remote
	// ones are the applier's business.
	Endpoints []hns.Endpoint
	// EndpointsVersion, when not zero, names the local endpoints of
	// Endpoints: two views with the same version hold the same ones, and an
	// Incremental keeps what it derived from them instead of mapping every
	// local endpoint again (the applier numbers the views of its model of
	// HNS, unique in the process). Zero means unknown.
	EndpointsVersion uint64
	// Capabilities of the host's HNS version.
	Capabilities hns.Capabilities
	// HostMAC is the MAC of the interface holding the node IP; overlay needs
	// it for the source-VIP and service-VIP endpoints.
	HostMAC string
}

// Input is everything the engine reads.
type Input struct {
	// NodeName is this node; EndpointSlice endpoints with this nodeName are local.
	NodeName string
	// Config is WindowsProxyNode.spec.proxy.
	Config v1alpha1.ResolvedProxyConfig
	// Node is this node (its InternalIPs are used when Config.NodeIPs is empty).
	Node *corev1.Node
	// Nodes are the other nodes, used to explain backends in a node's pod
	// CIDR that HNS has no remote-subnet route for yet.
	Nodes          []*corev1.Node
	Services       []*corev1.Service
	EndpointSlices []*discoveryv1.EndpointSlice
	HNS            HNSView
}

// Kind is the kind of a load balancer, named as in winkernel's metrics. It is a byte, and so is
// the key's Family: a load balancer's key (LBKey) is held seven times over by the engine and the
// applier, and at 64 bytes instead of 96 that is 2 MB less at 10k Services.
type Kind uint8

const (
	KindClusterIP Kind = iota + 1
	KindNodePort
	KindExternalIP
	KindIngress
	KindHealthCheck
)

var kindNames = [...]string{KindClusterIP: "clusterip", KindNodePort: "nodeport", KindExternalIP: "externalip", KindIngress: "ingress", KindHealthCheck: "healthcheck"}

// String is the kind's name; no kind is "".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// MarshalText writes the kind's name, as plan files and JSON show it.
func (k Kind) MarshalText() ([]byte, error) {
	if int(k) >= len(kindNames) {
		return nil, fmt.Errorf("no load-balancer kind %d", uint8(k))
	}
	return []byte(kindNames[k]), nil
}

// UnmarshalText reads a kind's name.
func (k *Kind) UnmarshalText(text []byte) error {
	i := slices.Index(kindNames[:], string(text))
	if i < 0 {
		return fmt.Errorf("no load-balancer kind %q: one of %s", text, strings.Join(kindNames[1:], ", "))
	}
	*k = Kind(i)
	return nil
}

// Family is a load balancer's IP family in a byte (see Kind); its text is the API's IPFamily.
type Family uint8

const (
	FamilyIPv4 Family = iota + 1
	FamilyIPv6
)

// FamilyOf is f in a byte; zero when f is neither family.
func FamilyOf(f v1alpha1.IPFamily) Family {
	switch f {
	case v1alpha1.IPv4:
		return FamilyIPv4
	case v1alpha1.IPv6:
		return FamilyIPv6
	}
	return 0
}

// IPFamily is the family as the API names it; "" for none.
func (f Family) IPFamily() v1alpha1.IPFamily {
	switch f {
	case FamilyIPv4:
		return v1alpha1.IPv4
	case FamilyIPv6:
		return v1alpha1.IPv6
	}
	return ""
}

func (f Family) String() string { return string(f.IPFamily()) }

// MarshalText writes the family as the API names it.
func (f Family) MarshalText() ([]byte, error) { return []byte(f.IPFamily()), nil }

// UnmarshalText reads a family as the API names it.
func (f *Family) UnmarshalText(text []byte) error {
	*f = FamilyOf(v1alpha1.IPFamily(text))
	if *f == 0 && len(text) > 0 {
		return fmt.Errorf("no IP family %q: IPv4 or IPv6", text)
	}
	return nil
}

// LBKey identifies a desired load balancer across syncs, so that a changed
// backend set modifies the same LB instead of creating another. Health-check
// LBs have no Service and Port: services sharing an ingress IP share them.
type LBKey struct {
	Service      string // namespace/name
	Port         string // service port name
	VIP          netip.Addr
	Protocol     uint32
	ExternalPort uint16
	Family       Family
	Kind         Kind
}

func (k LBKey) String() string {
	vip := "*"
	if k.VIP.IsValid() {
		vip = k.VIP.String()
	}
	s := fmt.Sprintf("%s/%s %s:%d/%s", k.Family, k.Kind, vip, k.ExternalPort, hns.ProtocolName(k.Protocol))
	if k.Service != "" {
		s += " " + k.Service
		if k.Port != "" {
			s += ":" + k.Port
		}
	}
	return s
}

// Less orders keys for stable output and for picking the winner of a
// frontend conflict.
func (k LBKey) Less(o LBKey) bool {
	if k.Family != o.Family {
		return k.Family < o.Family
	}
	if k.Kind != o.Kind {
		return kindOrder(k.Kind) < kindOrder(o.Kind)
	}
	if k.Service != o.Service {
		return k.Service < o.Service
	}
	if k.Port != o.Port {
		return k.Port < o.Port
	}
	if c := k.VIP.Compare(o.VIP); c != 0 {
		return c < 0
	}
	if k.Protocol != o.Protocol {
		return k.Protocol < o.Protocol
	}
	return k.ExternalPort < o.ExternalPort
}

// Compare orders keys as Less does, for slices.SortFunc.
func (k LBKey) Compare(o LBKey) int {
	switch {
	case k.Less(o):
		return -1
	case o.Less(k):
		return 1
	}
	return 0
}

func kindOrder(k Kind) int {
	switch k {
	case KindClusterIP:
		return 0
	case KindNodePort:
		return 1
	case KindExternalIP:
		return 2
	case KindIngress:
		return 3
	}
	return 4
}

// Backend is one backend of a load balancer.
type Backend struct {
	IP netip.Addr
	// Local is true when a local HNS endpoint holds the IP (a pod on this
	// node, or the root endpoint); EndpointID is then its ID. Remote
	// backends are resolved to remote endpoints by the applier.
	Local      bool
	EndpointID string
}

// LoadBalancer is a desired HNS load balancer.
type LoadBalancer struct {
	Key              LBKey
	InternalPort     uint16
	Flags            hns.LBFlags
	PortMappingFlags hns.PortMappingFlags
	Distribution     hns.DistributionType
	// SourceVIP is zero on L2Bridge, where HNS picks the address.
	SourceVIP netip.Addr
	// Backends are sorted by IP.
	Backends []Backend
	// Recreate asks for delete+create instead of modify when the LB changes
	// (annotation winProxyOptimization: disabled).
	Recreate bool
}

// RemoteEndpoint is a desired remote HNS endpoint.
type RemoteEndpoint struct {
	IP  netip.Addr
	MAC string
	// ProviderAddress is the overlay PA policy; zero on L2Bridge.
	ProviderAddress netip.Addr
	// ServiceVIP marks the overlay endpoint winkernel creates for a
	// ClusterIP (host MAC, PA = node IP) rather than for a backend.
	ServiceVIP bool
}

// SourceVIPEndpoint is the local endpoint holding the overlay source VIP,
// to be created when no endpoint holds the address.
type SourceVIPEndpoint struct {
	IP  netip.Addr
	MAC string
}

// Status is one condition the node reports about what is in effect: True
// or False, with a reason from the API's vocabulary
// (api/v1alpha1/conditions.go) and a message.
type Status struct {
	True    bool
	Reason  string
	Message string
}

// Cause says why something is so: a reason from the API's vocabulary and a
// message.
type Cause struct {
	Reason  string
	Message string
}

// Effective is what the node really does, for WindowsProxyNode.status.
type Effective struct {
	Network      v1alpha1.NetworkStatus
	NetworkReady Status
	// Programmable is false when HNS must be left as it is this sync (network
	// missing or of the wrong type, overlay without a usable source VIP);
	// Blocked says why, and is zero when the node is programmable. Desired
	// then holds no load balancers, which must not be read as "delete
	// everything".
	Programmable   bool
	Blocked        Cause
	SourceVIP      v1alpha1.SourceVIPStatus
	SourceVIPReady Status
	DSR            v1alpha1.DSRStatus
	DSRActive      Status
	IPFamilies     []v1alpha1.IPFamily
	// DualStackDowngraded is True when dual-stack was asked for but only one
	// family is proxied.
	DualStackDowngraded Status
	// TopologyRoutedServices counts the services whose cluster-wide load
	// balancers follow EndpointSlice topology hints on this node (for at
	// least one port), rather than spreading over every endpoint.
	TopologyRoutedServices int
}

// Problem is something the engine could not do as asked, for one service
// ("namespace/name") or the node (Service empty). Its Reason is one of the
// API's (api/v1alpha1/conditions.go), where each is documented.
type Problem struct {
	Service string
	Reason  string
	Message string
}
