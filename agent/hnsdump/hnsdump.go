// Package hnsdump prints what an HNS host holds the way `hnsdiag list loadbalancers` and
// `hnsdiag list endpoints` would, with backends resolved to their IPs, so an admin can read a
// node's programmed state at a glance (winproxy-agent hns dump, make demo).
package hnsdump

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/winproxy/winproxy/agent/hns"
)

// Flags renders an LB's flags by name: DSR, IPv6.
func Flags(lb hns.LoadBalancer) string { return orDash(strings.Join(LBFlagNames(lb.Flags), ",")) }

// PortFlags renders port-mapping flags by name.
func PortFlags(f hns.PortMappingFlags) string { return orDash(strings.Join(PortFlagNames(f), ",")) }

// flagName names one bit of an HNS flags value.
type flagName[F ~uint32] struct {
	flag F
	name string
}

// lbFlagNames and portFlagNames are the one spelling of HNS's flags, in bit order, that hns dump
// and plan print.
var (
	lbFlagNames = []flagName[hns.LBFlags]{{hns.LBFlagDSR, "DSR"}, {hns.LBFlagIPv6, "IPv6"}}

	portFlagNames = []flagName[hns.PortMappingFlags]{
		{hns.PortMappingILB, "ILB"},
		{hns.PortMappingLocalRoutedVIP, "LocalRoutedVIP"},
		{hns.PortMappingUseMux, "UseMux"},
		{hns.PortMappingPreserveDIP, "PreserveDIP"},
		{hns.PortMappingVipExternalIP, "VipExternalIP"},
	}
)

// LBFlagNames names the load-balancer flags set in f; never nil, so that JSON shows [].
func LBFlagNames(f hns.LBFlags) []string { return names(f, lbFlagNames) }

// PortFlagNames names the port-mapping flags set in f; never nil, so that JSON shows [].
func PortFlagNames(f hns.PortMappingFlags) []string { return names(f, portFlagNames) }

func names[F ~uint32](f F, all []flagName[F]) []string {
	out := []string{}
	for _, n := range all {
		if f&n.flag != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func addr(a netip.Addr, empty string) string {
	if !a.IsValid() {
		return empty
	}
	return a.String()
}

// LoadBalancers writes one line per load balancer, sorted by VIP and port: frontend, ports,
// protocol, flags, source VIP, distribution and the backends' IPs (an ID that no endpoint has is
// printed as the ID with a '?'). It is the compact view of make demo; `hns dump` adds IDs and
// owners (Dump.Tables).
func LoadBalancers(w io.Writer, lbs []hns.LoadBalancer, endpoints []hns.Endpoint) error {
	ips := endpointIPs(endpoints)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VIP\tPORTS\tPROTO\tFLAGS\tPORT FLAGS\tSOURCE VIP\tAFFINITY\tBACKENDS")
	for _, lb := range sortLoadBalancers(lbs) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", lbCells(lb, ips)...)
	}
	return tw.Flush()
}

// Endpoints writes one line per endpoint: name, IPs, local or remote, MAC and provider address.
func Endpoints(w io.Writer, endpoints []hns.Endpoint) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tIPS\tKIND\tMAC\tPROVIDER ADDRESS")
	for _, ep := range sortEndpoints(endpoints) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", endpointCells(ep)...)
	}
	return tw.Flush()
}

// endpointIPs maps each endpoint's ID, upper-cased (HNS keeps no case), to its IPs joined by '+'.
func endpointIPs(endpoints []hns.Endpoint) map[hns.ID]string {
	ips := make(map[hns.ID]string, len(endpoints))
	for _, ep := range endpoints {
		ips[hns.IDOf(ep.ID)] = joinIPs(ep.IPs, "+")
	}
	return ips
}

func joinIPs(ips []netip.Addr, sep string) string {
	s := make([]string, len(ips))
	for i, ip := range ips {
		s[i] = ip.String()
	}
	return strings.Join(s, sep)
}

// sortLoadBalancers orders load balancers by VIP, then port, then ID.
func sortLoadBalancers(lbs []hns.LoadBalancer) []hns.LoadBalancer {
	sorted := slices.Clone(lbs)
	slices.SortFunc(sorted, func(a, b hns.LoadBalancer) int {
		if c := a.VIP().Compare(b.VIP()); c != 0 {
			return c
		}
		if c := int(a.PortMapping.ExternalPort) - int(b.PortMapping.ExternalPort); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return sorted
}

// sortEndpoints puts local endpoints before remote ones, each by first IP, then ID.
func sortEndpoints(endpoints []hns.Endpoint) []hns.Endpoint {
	sorted := slices.Clone(endpoints)
	slices.SortFunc(sorted, func(a, b hns.Endpoint) int {
		if a.Remote != b.Remote {
			if a.Remote {
				return 1
			}
			return -1
		}
		if len(a.IPs) > 0 && len(b.IPs) > 0 {
			if c := a.IPs[0].Compare(b.IPs[0]); c != 0 {
				return c
			}
		}
		return strings.Compare(a.ID, b.ID)
	})
	return sorted
}

// lbCells are a load balancer's VIP, ports, protocol, flags, port flags, source VIP, affinity
// and backends, for a table row.
func lbCells(lb hns.LoadBalancer, ips map[hns.ID]string) []any {
	backends := make([]string, 0, len(lb.BackendEndpointIDs))
	for _, id := range lb.BackendEndpointIDs {
		if ip, ok := ips[hns.IDOf(id)]; ok {
			backends = append(backends, ip)
		} else {
			backends = append(backends, id+"?")
		}
	}
	slices.Sort(backends)
	affinity := "-"
	if lb.PortMapping.DistributionType == hns.DistributionSourceIP {
		affinity = "ClientIP"
	}
	return []any{
		addr(lb.VIP(), "(node ports)"), fmt.Sprintf("%d->%d", lb.PortMapping.ExternalPort, lb.PortMapping.InternalPort),
		hns.ProtocolName(lb.PortMapping.Protocol), Flags(lb), PortFlags(lb.PortMapping.Flags),
		addr(lb.SourceVIP, "-"), affinity, orDash(strings.Join(backends, ",")),
	}
}

// endpointCells are an endpoint's name, IPs, kind (local or remote), MAC and provider address.
func endpointCells(ep hns.Endpoint) []any {
	kind := "local"
	if ep.Remote {
		kind = "remote"
	}
	return []any{orDash(ep.Name), orDash(joinIPs(ep.IPs, ",")), kind, orDash(ep.MAC), addr(ep.ProviderAddress, "-")}
}
