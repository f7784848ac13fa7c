package daemon

import (
	"time"

	"github.com/winproxy/winproxy/agent/apply"
	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/nodestatus"
	"github.com/winproxy/winproxy/agent/syncmode"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// syncReport is what one sync learned, the input of the status and of the events, as the sync
// loop fills it in.
type syncReport struct {
	// hnsErr is set when the sync could not read HNS or stopped part-way (not running, or another
	// failure).
	hnsErr    error
	version   hns.Version
	windows   string
	effective engine.Effective
	result    apply.Result
	problems  []engine.Problem
	health    healthReport
	finished  time.Time
	duration  time.Duration
	// decision is how the sync read HNS and what it programmed (syncmode).
	decision syncmode.Decision
}

// buildStatus computes the WindowsProxyNode status from a sync report: nodestatus.Build, which
// `winproxy-agent plan` shows too.
func buildStatus(prev v1alpha1.WindowsProxyNodeStatus, wpn *v1alpha1.WindowsProxyNode, r syncReport) v1alpha1.WindowsProxyNodeStatus {
	return nodestatus.Build(prev, wpn, r.sync())
}

// sync is the report as nodestatus reads it.
func (r syncReport) sync() nodestatus.Sync {
	h := r.health
	return nodestatus.Sync{
		HNSErr: r.hnsErr, Version: r.version, WindowsBuild: r.windows,
		Effective: r.effective, Result: r.result, Problems: r.problems,
		Health: &h, Finished: r.finished, Duration: r.duration,
	}
}
