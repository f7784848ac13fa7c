//go:build windows

package hns

import "github.com/Microsoft/hcsshim/hcn"

// hcsshim declares its network types as constants: the declarations below do not compile when
// one of this package's drifts from it, so `GOOS=windows go build` and `go vet` fail. (The map's
// two keys differ, as they must, only when the strings are equal.)
var (
	_ = map[bool]struct{}{string(NetworkTypeL2Bridge) == string(hcn.L2Bridge): {}, false: {}}
	_ = map[bool]struct{}{string(NetworkTypeOverlay) == string(hcn.Overlay): {}, false: {}}
	_ = map[bool]struct{}{string(NetworkTypeNAT) == string(hcn.NAT): {}, false: {}}
	_ = map[bool]struct{}{string(NetworkTypeTransparent) == string(hcn.Transparent): {}, false: {}}
	_ = map[bool]struct{}{string(NetworkTypeL2Tunnel) == string(hcn.L2Tunnel): {}, false: {}}
	_ = map[bool]struct{}{string(NetworkTypeICS) == string(hcn.ICS): {}, false: {}}
	_ = map[bool]struct{}{string(NetworkTypePrivate) == string(hcn.Private): {}, false: {}}
)

// hcsshim declares its load-balancer flags, port-mapping flags and distribution types as
// variables, whose values no compiler can compare: the adapter maps them name by name instead of
// converting by value, so a drift cannot send HNS another flag than meant. A bit hcsshim has no
// name for (VipExternalIP, winkernel's own) passes as it is.
var (
	lbFlags = []pair[LBFlags, hcn.LoadBalancerFlags]{
		{LBFlagDSR, hcn.LoadBalancerFlagsDSR}, {LBFlagIPv6, hcn.LoadBalancerFlagsIPv6},
	}
	portMappingFlags = []pair[PortMappingFlags, hcn.LoadBalancerPortMappingFlags]{
		{PortMappingILB, hcn.LoadBalancerPortMappingFlagsILB},
		{PortMappingLocalRoutedVIP, hcn.LoadBalancerPortMappingFlagsLocalRoutedVIP},
		{PortMappingUseMux, hcn.LoadBalancerPortMappingFlagsUseMux},
		{PortMappingPreserveDIP, hcn.LoadBalancerPortMappingFlagsPreserveDIP},
	}
	distributions = []pair[DistributionType, hcn.LoadBalancerDistribution]{
		{DistributionNone, hcn.LoadBalancerDistributionNone},
		{DistributionSourceIPProtocol, hcn.LoadBalancerDistributionSourceIPProtocol},
		{DistributionSourceIP, hcn.LoadBalancerDistributionSourceIP},
	}
)

func hcnLBFlags(f LBFlags) hcn.LoadBalancerFlags { return flagsTo(f, lbFlags, forward) }
func hcnPortMappingFlags(f PortMappingFlags) hcn.LoadBalancerPortMappingFlags {
	return flagsTo(f, portMappingFlags, forward)
}
func hcnDistribution(d DistributionType) hcn.LoadBalancerDistribution {
	return valueTo(d, distributions, forward)
}

func ourLBFlags(f hcn.LoadBalancerFlags) LBFlags { return flagsTo(f, swapped(lbFlags), forward) }
func ourPortMappingFlags(f hcn.LoadBalancerPortMappingFlags) PortMappingFlags {
	return flagsTo(f, swapped(portMappingFlags), forward)
}
func ourDistribution(d hcn.LoadBalancerDistribution) DistributionType {
	return valueTo(d, swapped(distributions), forward)
}
