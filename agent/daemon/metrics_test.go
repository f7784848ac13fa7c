package daemon

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/winproxy/winproxy/agent/apply"
	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// The applier's refused load-balancer writes land in winkernel's counters under winkernel's
// label values: its lb_type names and its five error classes.
func TestLBFailuresAreCountedAsWinkernelCountsThem(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	for _, f := range []apply.LBFailure{
		{Op: hns.OpCreateLoadBalancer, Key: engine.LBKey{Family: engine.FamilyIPv4, Kind: engine.KindIngress}, Err: hns.ErrPortExists},
		{Op: hns.OpCreateLoadBalancer, Key: engine.LBKey{Family: engine.FamilyIPv4, Kind: engine.KindIngress}, Err: hns.ErrPortExists},
		{Op: hns.OpModifyLoadBalancer, Key: engine.LBKey{Family: engine.FamilyIPv6, Kind: engine.KindClusterIP}, Err: hns.ErrHNSNotRunning},
		{Op: hns.OpDeleteLoadBalancer, Key: engine.LBKey{Family: engine.FamilyIPv4}, Err: errors.New("access denied")},
		{Op: hns.OpDeleteLoadBalancer, Key: engine.LBKey{Family: engine.FamilyIPv4, Kind: engine.KindNodePort}, Err: hns.ErrNetworkNotFound},
	} {
		m.KubeProxy.countLBFailure(f)
	}
	for _, c := range []struct {
		vec    *prometheus.CounterVec
		labels []string
		want   float64
	}{
		{m.KubeProxy.LBCreateFailures, []string{"IPv4", "ingressip", "port_already_exists"}, 2},
		{m.KubeProxy.LBUpdateFailures, []string{"IPv6", "clusterip", "other"}, 1},
		{m.KubeProxy.LBDeleteFailures, []string{"IPv4", "unknown", "other"}, 1},
		{m.KubeProxy.LBDeleteFailures, []string{"IPv4", "nodeport", "network_not_found"}, 1},
	} {
		if got := counterValue(t, c.vec.WithLabelValues(c.labels...)); got != c.want {
			t.Errorf("%v = %v, want %v", c.labels, got, c.want)
		}
	}
	ch := make(chan prometheus.Metric, 10)
	m.KubeProxy.LBDeleteFailures.Collect(ch)
	if n := len(ch); n != 2 {
		t.Errorf("%d delete series, want 2", n)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var pb dto.Metric
	if err := c.Write(&pb); err != nil {
		t.Fatal(err)
	}
	return pb.GetCounter().GetValue()
}

// What is in effect on the node is on its /metrics, 0 or 1, as its status says it.
func TestEffectiveSettingsAreGauges(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	m.observeEffective(engine.Effective{
		Network:             v1alpha1.NetworkStatus{Type: string(v1alpha1.NetworkTypeOverlay)},
		DSRActive:           engine.Status{True: true},
		DualStackDowngraded: engine.Status{True: true},
	})
	for name, g := range map[string]prometheus.Gauge{"dsr": m.DSRActive, "overlay": m.Overlay, "downgraded": m.DualStackDowngraded} {
		if v := gaugeValue(t, g); v != 1 {
			t.Errorf("%s = %v, want 1", name, v)
		}
	}
	m.observeEffective(engine.Effective{Network: v1alpha1.NetworkStatus{Type: "L2Bridge"}})
	for name, g := range map[string]prometheus.Gauge{"dsr": m.DSRActive, "overlay": m.Overlay, "downgraded": m.DualStackDowngraded} {
		if v := gaugeValue(t, g); v != 0 {
			t.Errorf("%s = %v after an L2Bridge sync without DSR, want 0", name, v)
		}
	}
}

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var pb dto.Metric
	if err := g.Write(&pb); err != nil {
		t.Fatal(err)
	}
	return pb.GetGauge().GetValue()
}

// Every Service and EndpointSlice update counts among kube-proxy's Service or endpoint changes;
// only one that changes what the agent reads is pending a sync.
func TestServiceChangesCountAsKubeProxyCountsThem(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	tr := newChangeTracker(time.Unix(0, 0), m.KubeProxy)
	svc := &cachedService{cacheMeta: cacheMeta{namespace: "ns", name: "web"}, svc: &engine.Service{Namespace: "ns", Name: "web"}}
	tr.observe(svc, false)
	tr.unchanged(svc)
	tr.unchanged(&cachedSlice{})
	if got := counterValue(t, m.KubeProxy.ServiceChangesTotal); got != 2 {
		t.Errorf("service changes total = %v, want 2", got)
	}
	if got := counterValue(t, m.KubeProxy.EndpointChangesTotal); got != 1 {
		t.Errorf("endpoint changes total = %v, want 1: a slice update that changed nothing counts too", got)
	}
	if got := gaugeValue(t, m.KubeProxy.EndpointChangesPending); got != 0 {
		t.Errorf("endpoint changes pending = %v, want 0", got)
	}
	var pb dto.Metric
	if err := m.KubeProxy.ServiceChangesPending.Write(&pb); err != nil {
		t.Fatal(err)
	}
	if got := pb.GetGauge().GetValue(); got != 1 {
		t.Errorf("service changes pending = %v, want 1", got)
	}
}
