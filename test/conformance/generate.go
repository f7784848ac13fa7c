package conformance

import (
	"fmt"
	"math/rand/v2"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// Generate builds the cluster of a seed: a node under test (node-0) with a
// few remote nodes, a random HNS host and proxy settings, services of every
// kind with their EndpointSlices, and a sequence of changes as a cluster
// sees them (endpoints becoming ready or terminating, pods moving, services
// edited, added and deleted, the CNI creating and recreating pod
// endpoints, the proxy restarting).
//
// The clusters are valid Kubernetes objects and avoid what upstream itself
// handles nondeterministically, so that upstream's answer is well defined:
// no two services claim one frontend, and an address is not listed on one
// port in two slices of a service both running or both terminating (see
// ambiguous; within a slice, any duplicate).
func Generate(seed uint64) *Cluster {
	g := &gen{r: rand.New(rand.NewPCG(seed, 0x5eed)), topo: rand.New(rand.NewPCG(seed, 0x70b0)),
		pods: map[string]*pod{}, services: map[string]*svcState{}, frontends: map[frontendUse]bool{}}
	g.node(seed)
	var first Step
	for range 2 + g.r.IntN(9) {
		g.addService(&first)
	}
	g.c.Steps = append(g.c.Steps, first)
	for range 1 + g.r.IntN(5) {
		var s Step
		g.cur = &s
		g.change(&s)
		g.c.Steps = append(g.c.Steps, s)
	}
	return g.c
}

// hnsVersions are the simulated hosts: Windows Server 2019, a release
// without DSR, 2022 and 2025 (the only one with modify).
var hnsVersions = []hns.Version{hns.WindowsServer2019.HNS, {Major: 10, Minor: 1}, hns.WindowsServer2022.HNS, hns.WindowsServer2025.HNS}

const (
	v4 = "IPv4"
	v6 = "IPv6"
	// rootEndpoint is the host's endpoint health-check LBs forward to.
	rootEndpoint  = v1alpha1.DefaultRootEndpointName
	calicoEP      = "Calico_ep"
	hostMAC       = "00-15-5D-AA-BB-CC"
	nodeUnderTest = "node-0"
)

type gen struct {
	r *rand.Rand
	// topo draws the topology (zones, hints) from a stream of its own, so
	// that every other draw, hence the rest of a seed's cluster, is what it
	// was before the suite drew topology.
	topo     *rand.Rand
	c        *Cluster
	overlay  bool
	dual     bool
	nodes    int // remote nodes are 1..nodes
	pods     map[string]*pod
	podSeq   []int // per node
	services map[string]*svcState
	svcSeq   int
	nodePort int32
	hcPort   int32
	extIP    int
	ingIP    int
	public   int
	epGen    int
	// frontends in use: no two services may claim one (upstream resolves
	// that by map order).
	frontends map[frontendUse]bool
	ingress   []string // ingress IPs in use, for sharing
	// cur is the step being drawn; nil while drawing the cluster as the
	// proxy first finds it.
	cur *Step
}

type frontendUse struct {
	vip   string
	proto corev1.Protocol
	port  int32
}

// pod is a backend: a pod (with a CNI endpoint on node-0 once it exists), a
// host-network pod (the node's IP), or an address outside the cluster.
type pod struct {
	key  string
	node int // -1: outside the cluster
	ips  map[string]string
	cni  string // name of its CNI endpoint on node-0, "" if none (yet)
	// hostNet pods have the node's IP and never an HNS endpoint.
	hostNet bool
}

type svcState struct {
	svc    *corev1.Service
	slices []*discoveryv1.EndpointSlice
	// distribution is the service's trafficDistribution as its slices'
	// hints show it: "", PreferSameZone or PreferSameNode.
	distribution string
}

func (g *gen) pick(p float64) bool { return g.r.Float64() < p }

// Addresses are written in canonical form, as Kubernetes and HNS report
// them (upstream compares them as strings).

func nodeIP(k int, fam string) string {
	if fam == v6 {
		return addr("fd00::%x", k+1)
	}
	return fmt.Sprintf("10.0.0.%d", k+1)
}

func podCIDR(k int, fam string) string {
	if fam == v6 {
		return netip.PrefixFrom(netip.MustParseAddr(addr("fd10:0:%x::", k)), 48).String()
	}
	return fmt.Sprintf("10.%d.0.0/16", 100+k)
}

func podIP(k, i int, fam string) string {
	if fam == v6 {
		return addr("fd10:0:%x::%x", k, i)
	}
	return fmt.Sprintf("10.%d.%d.%d", 100+k, i/250, i%250+2)
}

// zoneOf is node k's zone: three zones, node-0 in zone-a.
func zoneOf(k int) string { return []string{"zone-a", "zone-b", "zone-c"}[k%3] }

// addr formats an address and returns its canonical form.
func addr(format string, args ...any) string {
	return netip.MustParseAddr(fmt.Sprintf(format, args...)).String()
}

// node sets up the node under test, its host and proxy flags.
func (g *gen) node(seed uint64) {
	r := g.r
	v := hnsVersions[r.IntN(len(hnsVersions))]
	caps := hns.CapabilitiesFor(v)
	g.overlay = g.pick(0.4)
	g.nodes = 2 + r.IntN(4)
	g.podSeq = make([]int, g.nodes+1)
	c := &Cluster{
		Name:       fmt.Sprintf("seed-%d", seed),
		NodeName:   nodeUnderTest,
		NodeIPs:    map[string]string{v4: nodeIP(0, v4)},
		Families:   []string{v4},
		HNSVersion: v.String(),
		Features: Features{DSR: caps.DSR, SessionAffinity: caps.SessionAffinity,
			IPv6DualStack: caps.IPv6DualStack, Modify: caps.ModifyLoadBalancer},
		HostMAC:     hostMAC,
		HealthzPort: v1alpha1.DefaultHealthCheckPort,
		Network:     Network{ID: "NETWORK-1", Name: "cbr0", Type: "L2Bridge"},
	}
	g.c = c
	// Mostly in the zone some hints name, sometimes in one none names, or
	// without a zone label.
	c.Zone = []string{zoneOf(0), zoneOf(0), zoneOf(0), zoneOf(1), "zone-x", ""}[g.topo.IntN(6)]
	// DSR on a host without it makes upstream refuse to start: keep that
	// rare, it hides everything else.
	c.EnableDSR = g.pick(0.4) && (caps.DSR || g.pick(0.3))
	if g.overlay {
		c.Network = Network{ID: "NETWORK-1", Name: "vxlan0", Type: "Overlay"}
		for k := 1; k <= g.nodes; k++ {
			// The last node's route is sometimes missing (not there yet):
			// its pods then count as outside the cluster.
			if k == g.nodes && g.pick(0.2) {
				continue
			}
			c.Network.Routes = append(c.Network.Routes, Route{Prefix: podCIDR(k, v4), ProviderAddress: nodeIP(k, v4), IsolationID: 4096})
		}
		c.SourceVIP = "10.100.255.254"
		if g.pick(0.3) {
			c.SourceVIP, c.SourceVIPEndpoint = "10.100.255.253", calicoEP
			c.Endpoints = append(c.Endpoints, LocalEndpoint{Name: calicoEP, IPs: []string{c.SourceVIP}, MAC: "00-15-5D-00-00-01"})
		}
	} else if caps.IPv6DualStack && g.pick(0.5) {
		g.dual = true
		c.Families = []string{v4, v6}
		c.NodeIPs[v6] = nodeIP(0, v6)
	}
	if g.pick(0.6) {
		c.ForwardHealthCheckVIP = true
		c.RootEndpointName = rootEndpoint
		if g.pick(0.1) {
			c.HealthzPort = 10266
		}
		if g.pick(0.9) {
			ips := []string{"10.100.0.1"}
			if g.dual {
				ips = append(ips, podIP(0, 1, v6))
			}
			c.Endpoints = append(c.Endpoints, LocalEndpoint{Name: rootEndpoint, IPs: ips, MAC: "00-15-5D-00-00-02"})
		}
	}
}
