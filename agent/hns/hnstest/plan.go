package hnstest

import "net/netip"

// NamePrefix starts the name of every network and endpoint the suite and its fixtures create,
// so a sweep can find what an interrupted run left behind. It begins with
// hns.EndpointNamePrefix, like every endpoint winproxy creates.
const NamePrefix = "winproxy-contract-"

// The address plan. Every range is reserved for documentation (RFC 5737, RFC 3849) and routed
// by no real network, so load balancers on these VIPs cannot capture a developer's traffic.
var (
	// Subnet4 and Subnet6 are the throw-away network's subnets: the pod addresses of "this
	// node". A fixture gives the network Subnet6 too when it is dual-stack.
	Subnet4 = netip.MustParsePrefix("203.0.113.0/24")
	Subnet6 = netip.MustParsePrefix("2001:db8:203::/64")
	// Gateway4 and Gateway6 are the first addresses of the subnets, for the network's routes.
	Gateway4 = nth(Subnet4, 1)
	Gateway6 = nth(Subnet6, 1)

	// remotePods4 and remotePods6 hold the addresses of backends on other nodes.
	remotePods4 = netip.MustParsePrefix("198.51.100.0/24")
	remotePods6 = netip.MustParsePrefix("2001:db8:198::/64")
	// vips4 and vips6 hold service VIPs (ClusterIP, external and ingress IPs).
	vips4 = netip.MustParsePrefix("192.0.2.0/24")
	vips6 = netip.MustParsePrefix("2001:db8:192::/64")
	// providerAddress is the underlay address of "another node", the PA of overlay remote
	// endpoints.
	providerAddress = nth(vips4, 254)
	// sourceVIP4 and sourceVIP6 are this node's source VIPs, inside the network's subnets as
	// an overlay source VIP is.
	sourceVIP4 = nth(Subnet4, 2)
	sourceVIP6 = nth(Subnet6, 2)
)

// Ports. nodePort is the only frontend without a VIP (all host addresses): pick a port no
// developer machine serves; the suite must not run on a node that serves NodePorts (docs/windows.md).
const (
	servicePort uint16 = 80
	targetPort  uint16 = 8080
	nodePort    uint16 = 32198
	healthPort  uint16 = 10256
)

// InPlan reports whether a is an address of the plan. A sweep of an interrupted run uses it to
// recognise the suite's load balancers, which carry no name.
func InPlan(a netip.Addr) bool {
	for _, p := range []netip.Prefix{Subnet4, Subnet6, remotePods4, remotePods6, vips4, vips6} {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func local4(n int) netip.Addr  { return nth(Subnet4, n) }
func local6(n int) netip.Addr  { return nth(Subnet6, n) }
func remote4(n int) netip.Addr { return nth(remotePods4, n) }
func remote6(n int) netip.Addr { return nth(remotePods6, n) }
func vip4(n int) netip.Addr    { return nth(vips4, n) }
func vip6(n int) netip.Addr    { return nth(vips6, n) }

// nth is the n-th address of p (n < 256).
func nth(p netip.Prefix, n int) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	b[len(b)-1] += byte(n)
	a, _ := netip.AddrFromSlice(b)
	return a
}
