// Package enginetest builds the large, deterministic clusters that the
// benchmarks of the engine and of the applier share (docs/performance.md),
// and puts them on a simulated HNS host. It lives outside the _test files so
// that both packages' benchmarks measure exactly the same workload.
package enginetest

import (
	"fmt"
	"net/netip"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// HostMAC is the MAC of the node's interface in every generated cluster.
const HostMAC = "00-15-5D-AA-BB-CC"

// FreePodIndex is the first pod index (see PodIP) no generated cluster uses:
// scenarios take new pod IPs from there.
const FreePodIndex = 60000

// Cluster is a cluster as seen by the agent of node-0.
type Cluster struct {
	NodeName string
	Config   v1alpha1.ResolvedProxyConfig
	// Network is the HNS network as the CNI created it (its ID is generated
	// by the host).
	Network hns.Network
	// LocalPods are the IPs of node-0's pods, each with a CNI endpoint.
	LocalPods      []netip.Addr
	Services       []*corev1.Service
	EndpointSlices []*discoveryv1.EndpointSlice
	// Nodes are the cluster's nodes (node-0 first) with their pod CIDRs and
	// InternalIPs, as the agent's informers see them.
	Nodes []*corev1.Node

	// addressing places the nodes' pods.
	addressing addressing
}

// addressing is where a cluster's nodes have their pods.
type addressing struct {
	podCIDR func(k int) netip.Prefix
	// freePod is the first pod index no generated pod of any node uses.
	freePod   int
	sourceVIP netip.Addr
}

// classic is the addressing of Large and Winkernel: a /16 per node, up to
// 155 nodes.
var classic = addressing{podCIDR: PodCIDR, freePod: FreePodIndex, sourceVIP: sourceVIP}

// wide is the addressing of Spread: a /22 per node (1,022 pods) in
// 10.128.0.0/9, up to 8,192 nodes.
var wide = addressing{
	podCIDR: func(k int) netip.Prefix {
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(128 + k/64), byte(k % 64 * 4), 0}), 22)
	},
	freePod:   1020,
	sourceVIP: netip.AddrFrom4([4]byte{10, 128, 3, 254}),
}

// PodCIDROf is node k's pod CIDR in this cluster.
func (c *Cluster) PodCIDROf(k int) netip.Prefix { return c.addressing.podCIDR(k) }

// PodIPOf is the i-th pod address of node k in this cluster.
func (c *Cluster) PodIPOf(k, i int) netip.Addr { return addrAdd(c.PodCIDROf(k).Addr(), i+1) }

// FreePodIP is an address of node k's pod CIDR that no generated pod uses,
// for scenarios that start a new pod.
func (c *Cluster) FreePodIP(k int) netip.Addr { return c.PodIPOf(k, c.addressing.freePod) }

// NodeName returns the name of node k; node 0 runs the agent under test.
func NodeName(k int) string { return fmt.Sprintf("node-%d", k) }

// NodeIP is node k's IP: 10.0.0.k+1, as in the workload upstream winkernel
// was measured on (Winkernel).
func NodeIP(k int) netip.Addr { return addrAdd(netip.AddrFrom4([4]byte{10, 0, 0, 1}), k) }

// PodCIDR is node k's pod CIDR, 10.(100+k).0.0/16.
func PodCIDR(k int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(100 + k), 0, 0}), 16)
}

// PodIP is the i-th pod address of node k.
func PodIP(k, i int) netip.Addr { return addrAdd(PodCIDR(k).Addr(), i+1) }

// sourceVIP sits at the end of node-0's pod CIDR, away from the pods.
var sourceVIP = netip.AddrFrom4([4]byte{10, 100, 255, 254})

func addrAdd(a netip.Addr, n int) netip.Addr {
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(n)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

var (
	largeOnce sync.Once
	large     *Cluster
)

// Large is issue #3's benchmark cluster: 10,000 ClusterIP services with 10
// endpoints each over 50 nodes on an overlay network; endpoint g (counting
// across services) runs on node g mod 50, so node-0 has 2,000 local pods and
// 98,000 backends are remote. It is built once per process and shared:
// callers must not modify it.
func Large() *Cluster {
	largeOnce.Do(func() {
		large = build(10000, 10, 50, true, false, func(g int) int { return g % 50 }, classic)
	})
	return large
}

// Spread is a cluster of services ClusterIP services with 10 endpoints each
// over nodes nodes on an overlay network, of which node-0, the node under
// test, runs localPods: endpoint g (counting across services) runs on node-0
// every services*10/localPods endpoints, else on the other nodes
// round-robin. Its nodes have a /22 each (Cluster.PodCIDROf), so that it
// scales to thousands of nodes, and services*10 - localPods must fit in
// 1,020 pods a node.
func Spread(services, nodes, localPods int) *Cluster {
	every := services * 10 / localPods
	return build(services, 10, nodes, true, false, func(g int) int {
		if g%every == 0 {
			return 0
		}
		return 1 + (g-g/every-1)%(nodes-1)
	}, wide)
}

// Winkernel is the workload upstream winkernel was measured on, to compare
// call for call (docs/performance.md#what-is-measured): n ClusterIP
// services with 5 endpoints each and 10 nodes; endpoint p (counting across
// services) is local when p is even, else on the remote nodes round-robin.
// overlay selects an overlay network with a source VIP, else L2Bridge; dsr
// enables DSR.
func Winkernel(n int, overlay, dsr bool) *Cluster {
	return build(n, 5, 10, overlay, dsr, func(p int) int {
		if p%2 == 0 {
			return 0
		}
		return 1 + (p/2)%9
	}, classic)
}

// build generates services svc-00000... (TCP 80 -> 8080, one slice each)
// with perSvc endpoints each, endpoint g placed on node place(g).
func build(services, perSvc, nodes int, overlay, dsr bool, place func(g int) int, at addressing) *Cluster {
	c := &Cluster{
		addressing: at,
		NodeName:   NodeName(0),
		Config: v1alpha1.ResolvedProxyConfig{
			Network:   v1alpha1.NetworkSpec{Name: "cbr0", Type: v1alpha1.NetworkTypeAuto},
			EnableDSR: dsr,
			NodeIPs:   []string{NodeIP(0).String()},
			// A config's default; the services have no topology hints.
			TopologyAwareRouting: true,
		},
		Network: hns.Network{Name: "cbr0", Type: hns.NetworkTypeL2Bridge},
	}
	if overlay {
		c.Config.Network.Name, c.Network.Name, c.Network.Type = "vxlan0", "vxlan0", hns.NetworkTypeOverlay
		c.Config.SourceVIP = &v1alpha1.ResolvedSourceVIP{Strategy: v1alpha1.SourceVIPStrategyStatic, Address: at.sourceVIP.String()}
		for k := 1; k < nodes; k++ {
			c.Network.RemoteSubnetRoutes = append(c.Network.RemoteSubnetRoutes,
				hns.RemoteSubnetRoute{DestinationPrefix: at.podCIDR(k), ProviderAddress: NodeIP(k), IsolationID: 4096})
		}
	}
	for k := range nodes {
		c.Nodes = append(c.Nodes, node(k, at.podCIDR(k)))
	}
	pods := make([]int, nodes) // pods so far, by node
	for s := range services {
		svc := Service(s)
		var eps []discoveryv1.Endpoint
		for e := range perSvc {
			k := place(s*perSvc + e)
			ip := c.PodIPOf(k, pods[k])
			pods[k]++
			if k == 0 {
				c.LocalPods = append(c.LocalPods, ip)
			}
			eps = append(eps, discoveryv1.Endpoint{Addresses: []string{ip.String()}, NodeName: new(NodeName(k)),
				Conditions: discoveryv1.EndpointConditions{Ready: new(true)}})
		}
		c.Services = append(c.Services, svc)
		c.EndpointSlices = append(c.EndpointSlices, slice(svc.Name, eps))
	}
	return c
}

// node is node k as its kubelet reports it: its pod CIDR and InternalIP.
func node(k int, cidr netip.Prefix) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: NodeName(k)},
		Spec:       corev1.NodeSpec{PodCIDR: cidr.String(), PodCIDRs: []string{cidr.String()}},
		Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: NodeIP(k).String()}}},
	}
}

// Service returns the s-th generated service.
func Service(s int) *corev1.Service {
	cip := addrAdd(netip.AddrFrom4([4]byte{10, 96, 0, 1}), s).String()
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("svc-%05d", s)},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: cip, ClusterIPs: []string{cip},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

func slice(svc string, eps []discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "bench", Name: svc + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: new("http"), Port: new(int32(8080)), Protocol: new(corev1.ProtocolTCP)}},
		Endpoints:   eps,
	}
}

// WithEndpoint returns a copy of s whose i-th endpoint is ip on node.
func WithEndpoint(s *discoveryv1.EndpointSlice, i int, ip netip.Addr, node string) *discoveryv1.EndpointSlice {
	out := s.DeepCopy()
	out.Endpoints[i].Addresses = []string{ip.String()}
	out.Endpoints[i].NodeName = &node
	return out
}

// View is what HNS reports once the agent ran: the network, the CNI's pod
// endpoints (IDs POD-<ip>) and the source-VIP endpoint on overlay. The
// engine's benchmarks use it instead of a simulated host.
func (c *Cluster) View(caps hns.Capabilities) engine.HNSView {
	v := engine.HNSView{Found: true, Network: c.Network, Capabilities: caps, HostMAC: HostMAC}
	v.Network.ID = "NETWORK-0"
	for _, ip := range c.LocalPods {
		v.Endpoints = append(v.Endpoints, hns.Endpoint{ID: "POD-" + ip.String(), Name: "pod-" + ip.String(), NetworkID: v.Network.ID, IPs: []netip.Addr{ip}})
	}
	if c.Network.Type == hns.NetworkTypeOverlay {
		svip := c.addressing.sourceVIP
		v.Endpoints = append(v.Endpoints, hns.Endpoint{ID: "SOURCE-VIP", Name: hns.OwnedEndpointName(svip), NetworkID: v.Network.ID, IPs: []netip.Addr{svip}})
	}
	return v
}

// Input is the engine's input for the view v.
func (c *Cluster) Input(v engine.HNSView) engine.Input {
	return engine.Input{NodeName: c.NodeName, Config: c.Config, Node: c.Nodes[0], Nodes: c.Nodes, Services: c.Services, EndpointSlices: c.EndpointSlices, HNS: v}
}

// Incremental returns an incremental engine holding the cluster's nodes, services and slices,
// as the agent's informers fill it; SetNode is the caller's.
func (c *Cluster) Incremental() *engine.Incremental {
	ec := engine.NewIncremental()
	for _, n := range c.Nodes {
		ec.SetClusterNode(n)
	}
	for _, s := range c.Services {
		ec.SetService(s)
	}
	for _, s := range c.EndpointSlices {
		ec.SetEndpointSlice(s)
	}
	return ec
}

// Host returns a simulated HNS host as the CNI leaves it before the agent
// starts: the network and one endpoint per local pod. IDs are deterministic,
// so two hosts of the same cluster report the same view.
func (c *Cluster) Host(p sim.Profile) (*sim.Sim, error) {
	s, err := sim.New(sim.WithProfile(p), sim.WithDeterministicIDs())
	if err != nil {
		return nil, err
	}
	if _, err := s.AddNetwork(c.Network); err != nil {
		return nil, err
	}
	for _, ip := range c.LocalPods {
		if _, err := s.AddLocalEndpoint(c.Network.Name, "pod-"+ip.String(), ip); err != nil {
			return nil, err
		}
	}
	return s, nil
}
