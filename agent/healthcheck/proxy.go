// Package healthcheck answers the health checks that cloud load balancers send to a node running a
// service proxy, with the semantics of kube-proxy (k8s.io/kubernetes pkg/proxy/healthcheck): the
// proxy health server (/healthz and /livez, port 10256 by default) says whether this node's proxy
// rules are up to date, and one service health server per healthCheckNodePort says whether the node
// has ready local endpoints for an externalTrafficPolicy: Local LoadBalancer Service. The agent
// replaces kube-proxy on its node, so without these servers every Windows node would be marked
// unhealthy by the cloud and lose its external traffic.
package healthcheck

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// ToBeDeletedTaint is the taint the cluster autoscaler puts on a node it is about to remove; such a
// node fails /healthz so that load balancers drain it first (kube-proxy does the same).
const ToBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"

// ProxyHealth tracks whether the proxy keeps up with its changes. It is unhealthy when a queued
// change has waited longer than the timeout for a sync, or when no sync completed within the
// timeout at all: kube-proxy only checks the first, but the agent also syncs periodically, so a
// sync loop that hangs (an HNS call that never returns) is found even when nothing changes.
type ProxyHealth struct {
	clock clock.PassiveClock
	node  func() *corev1.Node

	mu           sync.Mutex
	timeout      time.Duration
	lastUpdated  time.Time
	oldestQueued time.Time
	families     []corev1.IPFamily
}

// NewProxyHealth returns a tracker that counts its start as the last update, as kube-proxy does, so
// that a proxy still syncing for the first time is given one timeout. node returns this node, or
// nil while it is unknown.
func NewProxyHealth(clk clock.PassiveClock, timeout time.Duration, node func() *corev1.Node) *ProxyHealth {
	return &ProxyHealth{clock: clk, node: node, timeout: timeout, lastUpdated: clk.Now()}
}

// SetTimeout changes how long a queued change or the last sync may be old (kube-proxy uses twice
// the sync period).
func (h *ProxyHealth) SetTimeout(d time.Duration) {
	h.mu.Lock()
	h.timeout = d
	h.mu.Unlock()
}

// Timeout is how long a queued change or the last sync may be old.
func (h *ProxyHealth) Timeout() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.timeout
}

// QueuedUpdate records that a change is waiting for a sync; only the oldest waiting one counts.
func (h *ProxyHealth) QueuedUpdate() {
	h.mu.Lock()
	if h.oldestQueued.IsZero() {
		h.oldestQueued = h.clock.Now()
	}
	h.mu.Unlock()
}

// Updated records a completed sync that programmed the given IP families.
func (h *ProxyHealth) Updated(families []corev1.IPFamily) {
	h.mu.Lock()
	h.lastUpdated = h.clock.Now()
	h.oldestQueued = time.Time{}
	h.families = families
	h.mu.Unlock()
}

// Report is the JSON body of /healthz and /livez; its fields are kube-proxy's.
type Report struct {
	LastUpdated  time.Time `json:"lastUpdated"`
	CurrentTime  time.Time `json:"currentTime"`
	NodeEligible *bool     `json:"nodeEligible,omitempty"`
	Healthy      bool      `json:"healthy"`
	// Status is per IP family, as kube-proxy reports one proxier per family; the agent programs
	// both families in one sync, so they share their times.
	Status map[corev1.IPFamily]FamilyReport `json:"status,omitempty"`
}

// FamilyReport is the health of one IP family.
type FamilyReport struct {
	LastUpdated time.Time `json:"lastUpdated"`
	Healthy     bool      `json:"healthy"`
}

// Health reports whether the proxy keeps up.
func (h *ProxyHealth) Health() Report {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	healthy := now.Sub(h.lastUpdated) < h.timeout &&
		(h.oldestQueued.IsZero() || now.Sub(h.oldestQueued) < h.timeout)
	r := Report{LastUpdated: h.lastUpdated, CurrentTime: now, Healthy: healthy}
	if len(h.families) > 0 {
		r.Status = map[corev1.IPFamily]FamilyReport{}
		for _, f := range h.families {
			r.Status[f] = FamilyReport{LastUpdated: h.lastUpdated, Healthy: healthy}
		}
	}
	return r
}

// Behind reports whether the proxy is behind, the state in which /livez fails, and since when:
// the oldest change still waiting for a sync or, when none waits, the last completed sync.
func (h *ProxyHealth) Behind() (since time.Time, behind bool) {
	if h.Health().Healthy {
		return time.Time{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.oldestQueued.IsZero() && h.clock.Since(h.oldestQueued) >= h.timeout {
		return h.oldestQueued, true
	}
	return h.lastUpdated, true
}

// NodeEligible is false while this node is unknown, being deleted, or about to be removed by the
// cluster autoscaler: load balancers should stop sending new connections to it.
func (h *ProxyHealth) NodeEligible() bool {
	n := h.node()
	if n == nil || n.DeletionTimestamp != nil {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == ToBeDeletedTaint {
			return false
		}
	}
	return true
}

// Responses counts answers by path ("healthz", "livez") and HTTP code; the agent exports it as
// kube-proxy's kubeproxy_proxy_{healthz,livez}_total.
type Responses func(path string, code int)

// Handler serves /healthz (healthy and the node eligible) and /livez (healthy only; a node being
// drained is still alive and must not be restarted).
func (h *ProxyHealth) Handler(count Responses) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		r := h.Health()
		eligible := h.NodeEligible()
		r.NodeEligible = &eligible
		writeReport(w, "healthz", r, r.Healthy && eligible, h.clock, count)
	})
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) {
		r := h.Health()
		writeReport(w, "livez", r, r.Healthy, h.clock, count)
	})
	return mux
}

func writeReport(w http.ResponseWriter, path string, r Report, ok bool, clk clock.PassiveClock, count Responses) {
	code := http.StatusServiceUnavailable
	if ok {
		code = http.StatusOK
		// kube-proxy reports a healthy proxy as updated now: nothing is waiting.
		r.LastUpdated = clk.Now()
	}
	if count != nil {
		count(path, code)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(r)
}
