package hns

import "fmt"

// Version is the HNS service version (GET /globals/version), which is what
// feature support is keyed on; the Windows build number alone is not enough
// because HNS is serviced by monthly updates.
type Version struct {
	Major int `json:"major"`
	Minor int `json:"minor"`
}

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// AtLeast reports v >= o.
func (v Version) AtLeast(o Version) bool {
	return v.Major > o.Major || (v.Major == o.Major && v.Minor >= o.Minor)
}

// Capabilities are the HNS features the proxy cares about.
type Capabilities struct {
	APIV2              bool `json:"apiV2"`
	RemoteSubnet       bool `json:"remoteSubnet"`
	DSR                bool `json:"dsr"`
	IPv6DualStack      bool `json:"ipv6DualStack"`
	SessionAffinity    bool `json:"sessionAffinity"`
	ModifyLoadBalancer bool `json:"modifyLoadBalancer"`
}

// CapabilitiesFor derives capabilities from an HNS version with the ranges
// of hcsshim's hcnglobals.go, except ModifyLoadBalancer: hcsshim v0.15.0
// enables it from 15.4, but on HNS 15.4 (Windows Server 2025, k/k #131466)
// modify was accepted without updating the backends, so a proxy relying on it
// would silently serve stale endpoints. hnslib moved the floor to 15.5 (and
// excludes nothing above 16.0); we follow that, falling back to
// delete+create below it, which is slower but always correct.
//
// The zero Version (query failed, pre-1803) yields no capabilities.
func CapabilitiesFor(v Version) Capabilities {
	return Capabilities{
		APIV2:        v.AtLeast(Version{9, 2}),
		RemoteSubnet: v.AtLeast(Version{9, 2}),
		// DSR arrived in 9.3, was missing from the 10.0 and 10.1 branches, and
		// returned in 10.2.
		DSR:                (v.Major == 9 && v.Minor >= 3) || v.AtLeast(Version{10, 2}),
		IPv6DualStack:      v.AtLeast(Version{11, 10}),
		SessionAffinity:    v.AtLeast(Version{12, 0}),
		ModifyLoadBalancer: (v.Major == 15 && v.Minor >= 5) || v.AtLeast(Version{16, 0}),
	}
}
