package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/winproxy/winproxy/agent/hns"
)

// Profile describes a simulated Windows host: its HNS version (which fixes
// the capabilities, see hns.CapabilitiesFor) and the quirks of that release.
type Profile struct {
	Name          string      `json:"name"`
	WindowsServer string      `json:"windowsServer"`
	Build         int         `json:"build"`
	Version       hns.Version `json:"version"`
	// DuplicateIPQuirk: a local and a remote endpoint may hold the same IP
	// (WS2019/WS2022 bug the proxy must clean up after); without it HNS
	// refuses the second endpoint.
	DuplicateIPQuirk bool `json:"duplicateIPQuirk"`
}

// Capabilities of the profile's HNS version.
func (p Profile) Capabilities() hns.Capabilities { return hns.CapabilitiesFor(p.Version) }

// Profiles of the Windows Server releases winproxy supports. Versions are
// the ones reported in public issues (docs/compatibility.md#windows-server-and-hns);
// exact minors vary with patch level.
var (
	// WS2019: HNS 9.5 (2026 builds): V2, remote subnets, DSR; no dual-stack,
	// no session affinity, no modify.
	WS2019 = Profile{Name: "ws2019", WindowsServer: "2019", Build: 17763, Version: hns.Version{Major: 9, Minor: 5}, DuplicateIPQuirk: true}
	// WS2022: HNS 13.3: DSR, dual-stack, session affinity; no modify.
	WS2022 = Profile{Name: "ws2022", WindowsServer: "2022", Build: 20348, Version: hns.Version{Major: 13, Minor: 3}, DuplicateIPQuirk: true}
	// WS2025: HNS 15.5, the first version whose modify is trusted.
	WS2025 = Profile{Name: "ws2025", WindowsServer: "2025", Build: 26100, Version: hns.Version{Major: 15, Minor: 5}}
)

// Profiles lists the built-in profiles, oldest first.
func Profiles() []Profile { return []Profile{WS2019, WS2022, WS2025} }

// ProfileByName finds a built-in profile by name ("ws2022"), accepting the
// bare year ("2022") too, case-insensitively.
func ProfileByName(name string) (Profile, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, p := range Profiles() {
		if n == p.Name || n == p.WindowsServer {
			return p, nil
		}
	}
	names := make([]string, 0, 3)
	for _, p := range Profiles() {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return Profile{}, fmt.Errorf("unknown HNS profile %q (known: %s)", name, strings.Join(names, ", "))
}
