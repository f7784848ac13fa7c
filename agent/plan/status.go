package plan

import (
	"github.com/winproxy/winproxy/agent/apply"
	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/nodestatus"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// agentSync is the sync the plan previews: what the engine computes and what the applier reports.
type agentSync struct {
	version      hns.Version
	windowsBuild string
	desired      *engine.Desired
	result       apply.Result
}

// status is the status the agent would write after the sync, built by the agent's own
// nodestatus.Build for a node that has no status yet. The plan runs no health servers: it claims
// nothing about them (no HealthCheckServing).
func (s agentSync) status(wpn *v1alpha1.WindowsProxyNode) Status {
	if wpn == nil {
		wpn = &v1alpha1.WindowsProxyNode{}
	}
	st := nodestatus.Build(v1alpha1.WindowsProxyNodeStatus{}, wpn, nodestatus.Sync{
		Version: s.version, WindowsBuild: s.windowsBuild,
		Effective: s.desired.Effective, Result: s.result, Problems: s.desired.Problems(),
	})
	out := Status{
		Network: st.Network, SourceVIP: st.SourceVIP, DSR: st.DSR, IPFamilies: st.IPFamilies, HNS: st.HNS,
		LoadBalancers: st.LoadBalancers, RemoteEndpoints: st.RemoteEndpoints, TopologyRoutedServices: st.TopologyRoutedServices,
		Programmable: s.desired.Effective.Programmable, Conditions: make([]Condition, len(st.Conditions)),
	}
	if out.IPFamilies == nil {
		out.IPFamilies = []v1alpha1.IPFamily{}
	}
	for i, c := range st.Conditions {
		out.Conditions[i] = Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message}
	}
	return out
}

// assumedResult is what the applier reports of d when every HNS call succeeds, as a plan without
// the host's dump assumes: every load balancer and remote endpoint programmed, or, when d is not
// programmable, none (the applier leaves HNS as it is and counts every load balancer failed).
func assumedResult(d *engine.Desired) apply.Result {
	n := len(d.LoadBalancers)
	if !d.Effective.Programmable {
		return apply.Result{Skipped: apply.SkippedBlocked, LBsDesired: n, LBsFailed: n}
	}
	return apply.Result{LBsDesired: n, LBsProgrammed: n, RemoteEndpoints: d.RemoteEndpoints.Len()}
}
