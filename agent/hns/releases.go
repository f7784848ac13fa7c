package hns

// Release is a Windows Server release winproxy supports: its build, the HNS version it reports
// (which fixes its capabilities, see CapabilitiesFor) and what it does that its HNS version does
// not say.
type Release struct {
	// WindowsServer is the release's year, e.g. "2022".
	WindowsServer string
	// Build is the Windows build number, e.g. 20348.
	Build int
	// HNS is the version current patch levels report; exact minors vary with patch level, the
	// ones here are those reported in public issues (docs/compatibility.md#windows-server-and-hns).
	HNS Version
	// DuplicateIPQuirk: a local and a remote endpoint may hold the same IP, a bug of Windows
	// Server 2019 and 2022 that winkernel cleans up after (hns.go getAllEndpointsByNetwork); later
	// releases refuse the second endpoint.
	DuplicateIPQuirk bool
}

// The Windows Server releases winproxy supports.
var (
	// WindowsServer2019: HNS 9.5 (2026 builds): API v2, remote subnets, DSR; no dual-stack, no
	// session affinity, no modify.
	WindowsServer2019 = Release{WindowsServer: "2019", Build: 17763, HNS: Version{Major: 9, Minor: 5}, DuplicateIPQuirk: true}
	// WindowsServer2022: HNS 13.3: DSR, dual-stack, session affinity; no modify.
	WindowsServer2022 = Release{WindowsServer: "2022", Build: 20348, HNS: Version{Major: 13, Minor: 3}, DuplicateIPQuirk: true}
	// WindowsServer2025: HNS 15.5, the first version whose modify is trusted.
	WindowsServer2025 = Release{WindowsServer: "2025", Build: 26100, HNS: Version{Major: 15, Minor: 5}}
)

// Releases lists the supported releases, oldest first.
func Releases() []Release {
	return []Release{WindowsServer2019, WindowsServer2022, WindowsServer2025}
}

// ReleaseOfBuild finds the release of a Windows build number; ok is false when none has it.
func ReleaseOfBuild(build int) (r Release, ok bool) {
	for _, r := range Releases() {
		if r.Build == build {
			return r, true
		}
	}
	return Release{}, false
}
