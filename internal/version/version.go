// Package version holds the build's version and commit, stamped by the Makefile with -ldflags, so
// both binaries report the same strings in logs, status, `version` and the build-info metrics.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Version is the winproxy version; "dev" for unstamped builds.
var Version = "dev"

// Commit is the git commit of the build; unstamped builds read it from the Go build info when the
// binary was built inside a git checkout.
var Commit = ""

// Info is what `version` prints.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build's Info.
func Get() Info {
	commit := Commit
	if commit == "" {
		commit = "unknown"
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					commit = s.Value
				}
			}
		}
	}
	return Info{Version: Version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
}

func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, %s, %s)", i.Version, i.Commit, i.GoVersion, i.Platform)
}

// NewBuildInfo returns a gauge, always 1, whose labels say which build runs: the usual way to join
// a version onto other series in PromQL.
func NewBuildInfo(name string) prometheus.Collector {
	info := Get()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: name,
		Help: "Always 1; the labels say which build runs.",
	}, []string{"version", "commit", "goversion"})
	g.WithLabelValues(info.Version, info.Commit, info.GoVersion).Set(1)
	return g
}
