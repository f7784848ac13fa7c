//go:build windows

package hns

import "github.com/Microsoft/hcsshim/hcn"

// The adapter converts this package's flags, distribution types and network types to hcsshim's
// by value (hcn_windows.go): they must be equal, and the declarations below do not compile when
// one drifts, so `GOOS=windows go build` and `go vet` fail on it. An integer pair compiles only
// when the difference indexes the one-element array; a string pair only when the map's two keys
// differ, which they do when the strings are equal.
var (
	_ = [1]struct{}{}[uint32(LBFlagDSR)-uint32(hcn.LoadBalancerFlagsDSR)]
	_ = [1]struct{}{}[uint32(LBFlagIPv6)-uint32(hcn.LoadBalancerFlagsIPv6)]

	_ = [1]struct{}{}[uint32(PortMappingILB)-uint32(hcn.LoadBalancerPortMappingFlagsILB)]
	_ = [1]struct{}{}[uint32(PortMappingLocalRoutedVIP)-uint32(hcn.LoadBalancerPortMappingFlagsLocalRoutedVIP)]
	_ = [1]struct{}{}[uint32(PortMappingUseMux)-uint32(hcn.LoadBalancerPortMappingFlagsUseMux)]
	_ = [1]struct{}{}[uint32(PortMappingPreserveDIP)-uint32(hcn.LoadBalancerPortMappingFlagsPreserveDIP)]

	_ = [1]struct{}{}[uint32(DistributionNone)-uint32(hcn.LoadBalancerDistributionNone)]
	_ = [1]struct{}{}[uint32(DistributionSourceIPProtocol)-uint32(hcn.LoadBalancerDistributionSourceIPProtocol)]
	_ = [1]struct{}{}[uint32(DistributionSourceIP)-uint32(hcn.LoadBalancerDistributionSourceIP)]

	_ = map[bool]struct{}{string(NetworkTypeL2Bridge) == string(hcn.L2Bridge): {}, false: {}}
	_ = map[bool]struct{}{string(NetworkTypeOverlay) == string(hcn.Overlay): {}, false: {}}
	_ = map[bool]struct{}{string(NetworkTypeNAT) == string(hcn.NAT): {}, false: {}}
	_ = map[bool]struct{}{string(NetworkTypeTransparent) == string(hcn.Transparent): {}, false: {}}
	_ = map[bool]struct{}{string(NetworkTypeL2Tunnel) == string(hcn.L2Tunnel): {}, false: {}}
	_ = map[bool]struct{}{string(NetworkTypeICS) == string(hcn.ICS): {}, false: {}}
	_ = map[bool]struct{}{string(NetworkTypePrivate) == string(hcn.Private): {}, false: {}}
)
