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
	// (hns.Release.DuplicateIPQuirk); without it HNS refuses the second
	// endpoint.
	DuplicateIPQuirk bool `json:"duplicateIPQuirk"`
}

// Capabilities of the profile's HNS version.
func (p Profile) Capabilities() hns.Capabilities { return hns.CapabilitiesFor(p.Version) }

// Profiles of the Windows Server releases winproxy supports, as hns.Releases
// describes them.
var (
	WS2019 = profileOf(hns.WindowsServer2019)
	WS2022 = profileOf(hns.WindowsServer2022)
	WS2025 = profileOf(hns.WindowsServer2025)
)

// profileOf is the profile of a release, named "ws" and its year ("ws2022").
func profileOf(r hns.Release) Profile {
	return Profile{Name: "ws" + r.WindowsServer, WindowsServer: r.WindowsServer, Build: r.Build, Version: r.HNS, DuplicateIPQuirk: r.DuplicateIPQuirk}
}

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
