package daemon

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/winproxy/winproxy/agent/apply"
	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// buildStatus hands every fact of the sync report to nodestatus (whose tests cover the status
// itself).
func TestBuildStatusReadsTheWholeReport(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	wpn := &v1alpha1.WindowsProxyNode{Spec: v1alpha1.WindowsProxyNodeSpec{Hash: "h1"}}
	wpn.Generation = 3
	r := syncReport{
		version: hns.Version{Major: 13, Minor: 3},
		windows: "20348",
		effective: engine.Effective{
			Programmable: true, Network: v1alpha1.NetworkStatus{Name: "Calico"}, IPFamilies: []v1alpha1.IPFamily{v1alpha1.IPv4},
		},
		result:   apply.Result{LBsDesired: 3, LBsProgrammed: 3, RemoteEndpoints: 2},
		problems: []engine.Problem{{Service: "a/web", Reason: v1alpha1.ReasonMixedTargetPorts, Message: "mixed"}},
		health:   healthReport{ProxyAddr: "0.0.0.0:10256", Services: 1},
		finished: t0,
		duration: 7 * time.Millisecond,
	}
	st := buildStatus(v1alpha1.WindowsProxyNodeStatus{}, wpn, r)
	if st.HNS.Version != "13.3" || st.HNS.WindowsBuild != "20348" || st.Network.Name != "Calico" || st.LoadBalancers.Programmed != 3 ||
		st.RemoteEndpoints != 2 || st.HealthCheck.ProxyAddress != "0.0.0.0:10256" || st.HealthCheck.ServiceHealthServers != 1 ||
		st.LastSyncTime == nil || !st.LastSyncTime.Time.Equal(t0) || st.LastSyncDurationMilliseconds != 7 {
		t.Errorf("status = %+v", st)
	}
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgrammed)
	if c == nil || c.ObservedGeneration != 3 || c.Message != "3 load balancers and 2 remote endpoints programmed; 1 problem, e.g. service a/web: mixed" {
		t.Errorf("Programmed = %+v", c)
	}
	if meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionHealthCheckServing) == nil {
		t.Error("no HealthCheckServing: the report's health was lost")
	}

	r.hnsErr = errors.New("HNS went away")
	if c := meta.FindStatusCondition(buildStatus(st, wpn, r).Conditions, v1alpha1.ConditionProgrammed); c == nil || c.Reason != v1alpha1.ReasonSyncFailed {
		t.Errorf("after an HNS error, Programmed = %+v", c)
	}
}
