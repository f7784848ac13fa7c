package daemon

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/healthcheck"
	"github.com/winproxy/winproxy/agent/nodestatus"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// healthServers are what the agent answers cloud load balancers with, as kube-proxy does on the
// node it replaces: the proxy health server on the config's health-check port and one service
// health server per healthCheckNodePort, all on the host part of --healthz-bind-address.
type healthServers struct {
	// host and port come from --healthz-bind-address; port 0 means the config's
	// spec.healthCheck.port, which is what health-check load balancers forward to.
	host     string
	port     int
	disabled bool

	proxy    *healthcheck.ProxyHealth
	server   *healthcheck.Server
	services *healthcheck.Services
}

// healthReport is what the last sync learned about the health servers, for status and events.
type healthReport = nodestatus.Health

// parseHealthzBindAddress accepts kube-proxy's forms: "IP", "IP:port", ":port" and "" (disabled).
func parseHealthzBindAddress(s string) (host string, port int, disabled bool, err error) {
	if s == "" || s == "0" {
		return "", 0, true, nil
	}
	if ip := net.ParseIP(strings.Trim(s, "[]")); ip != nil {
		return ip.String(), 0, false, nil
	}
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, false, fmt.Errorf("--healthz-bind-address %q: want IP or IP:port: %w", s, err)
	}
	if h != "" && net.ParseIP(h) == nil {
		return "", 0, false, fmt.Errorf("--healthz-bind-address %q: %q is not an IP address", s, h)
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, false, fmt.Errorf("--healthz-bind-address %q: bad port %q", s, p)
	}
	return h, port, false, nil
}

// unspecifiedHost listens on every address: "0.0.0.0" and "::" both mean all of the node's.
func unspecifiedHost(h string) string {
	if ip := net.ParseIP(h); ip != nil && ip.IsUnspecified() {
		return ""
	}
	return h
}

// sync moves the proxy health server to the config's port and opens, moves or closes the service
// health servers whose checks changed (engine.HealthCheckChanges), and tries again those that
// could not listen.
func (h *healthServers) sync(cfg v1alpha1.ResolvedProxyConfig, changes map[string]*engine.ServiceHealthCheck) healthReport {
	if h.disabled {
		return healthReport{Disabled: true}
	}
	port := h.port
	if port == 0 {
		port = int(cfg.HealthCheck.Port)
	}
	if port == 0 {
		port = v1alpha1.DefaultHealthCheckPort
	}
	var r healthReport
	addr := net.JoinHostPort(h.host, strconv.Itoa(port))
	if r.ProxyErr = h.server.Serve(addr); r.ProxyErr == nil {
		r.ProxyAddr = addr
	}
	var want map[string]*healthcheck.Want
	if len(changes) > 0 {
		want = make(map[string]*healthcheck.Want, len(changes))
	}
	for name, c := range changes {
		if c == nil {
			want[name] = nil
			continue
		}
		want[name] = &healthcheck.Want{Port: c.Port, LocalEndpoints: c.LocalEndpoints}
	}
	r.Failures = h.services.Update(want)
	r.Services = h.services.Listening()
	return r
}

func (h *healthServers) close() {
	h.server.Close()
	h.services.Close()
}

// changeTracker counts Service and EndpointSlice changes and remembers the trigger times of
// EndpointSlice changes until a sync programs them, for kube-proxy's change and network-programming
// SLIs.
type changeTracker struct {
	started time.Time
	m       KubeProxyMetrics

	mu sync.Mutex
	// triggers are the endpoints.kubernetes.io/last-change-trigger-time values of EndpointSlice
	// changes not yet programmed, by the slice's address family.
	triggers map[v1alpha1.IPFamily][]time.Time
	services int
	slices   int
}

func newChangeTracker(started time.Time, m KubeProxyMetrics) *changeTracker {
	return &changeTracker{started: started, m: m, triggers: map[v1alpha1.IPFamily][]time.Time{}}
}

// observe records one informer event.
func (t *changeTracker) observe(o metav1.Object, deleted bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch obj := o.(type) {
	case *cachedService:
		t.services++
		t.m.ServiceChangesTotal.Inc()
		t.m.ServiceChangesPending.Set(float64(t.services))
	case *cachedSlice:
		t.slices++
		t.m.EndpointChangesTotal.Inc()
		t.m.EndpointChangesPending.Set(float64(t.slices))
		// A deleted slice's trigger time is that of its last update, not of the deletion; kube-proxy
		// ignores it too. So are changes made before the agent started: their latency is not ours.
		if deleted {
			return
		}
		if obj.trigger.After(t.started) {
			fam := v1alpha1.IPv4
			if obj.slice.Family == v1alpha1.IPv6 {
				fam = v1alpha1.IPv6
			}
			t.triggers[fam] = append(t.triggers[fam], obj.trigger)
		}
	}
}

// unchanged records an update that changed nothing the agent reads: kube-proxy counts it among
// the Service or endpoint changes, but not as pending.
func (t *changeTracker) unchanged(o any) {
	switch o.(type) {
	case *cachedService:
		t.m.ServiceChangesTotal.Inc()
	case *cachedSlice:
		t.m.EndpointChangesTotal.Inc()
	}
}

// drained is called when the queued changes reached the engine: they are no longer pending.
func (t *changeTracker) drained() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.services, t.slices = 0, 0
	t.m.ServiceChangesPending.Set(0)
	t.m.EndpointChangesPending.Set(0)
}

// programmed observes the network-programming latency of every change a sync programmed, for the
// families in effect; changes of a family the node does not proxy are dropped.
func (t *changeTracker) programmed(now time.Time, families []v1alpha1.IPFamily) {
	t.mu.Lock()
	triggers := t.triggers
	t.triggers = map[v1alpha1.IPFamily][]time.Time{}
	t.mu.Unlock()
	for _, fam := range families {
		for _, ts := range triggers[fam] {
			t.m.NetworkProgrammingLatency.WithLabelValues(string(fam)).Observe(now.Sub(ts).Seconds())
		}
	}
}

// coreFamilies converts the API's families to the core ones the health report uses.
func coreFamilies(fams []v1alpha1.IPFamily) []corev1.IPFamily {
	out := make([]corev1.IPFamily, 0, len(fams))
	for _, f := range fams {
		out = append(out, corev1.IPFamily(f))
	}
	return out
}

// thisNode reads this node from the informer cache for the proxy health server, which drains a
// node that is being deleted or removed by the cluster autoscaler.
func (a *agent) thisNode() *corev1.Node {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n := &corev1.Node{}
	if err := a.client.Get(ctx, client.ObjectKey{Name: a.opts.NodeName}, n); err != nil {
		return nil
	}
	return n
}

// liveness is the agent's own /healthz check: it fails when the sync loop is stuck, so that the
// kubelet restarts an agent hung behind HNS instead of leaving the node's proxying frozen.
func (a *agent) liveness(*http.Request) error {
	if why := a.runner.Stuck(a.livenessTimeout()); why != "" {
		return fmt.Errorf("sync loop stuck: %s", why)
	}
	return nil
}

// livenessTimeout is how long the sync loop may go without progress: two sync periods, and at
// least two HNS call timeouts (so that one slow call is not taken for a hang), or a minute when
// calls are unbounded.
func (a *agent) livenessTimeout() time.Duration {
	_, period := a.runner.periods()
	if a.opts.HNSCallTimeout > 0 {
		return max(2*period, 2*a.opts.HNSCallTimeout)
	}
	return max(2*period, time.Minute)
}
