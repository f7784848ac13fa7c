package controllers

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/winproxy/winproxy/controllers/heartbeat"
)

// heartbeatAges exports each selected node's heartbeat age, computed when scraped from what the
// heartbeat reconciler last saw: a gauge set per renewal would cost a write per renewal and still
// be stale between them.
type heartbeatAges struct {
	desc *prometheus.Desc
	// source is the running heartbeat reconciler's tracker and clock; nil exports nothing.
	source atomic.Pointer[ageSource]
}

type ageSource struct {
	tracker *heartbeat.Tracker
	clock   clock.PassiveClock
}

var heartbeatAge = &heartbeatAges{desc: prometheus.NewDesc("winproxy_node_heartbeat_age_seconds",
	"Seconds since the controller last saw the node's agent renew its heartbeat Lease; the node's WindowsProxyNode reports AgentAlive=False once it exceeds --node-grace-period.",
	[]string{"node", "config"}, nil)}

func (h *heartbeatAges) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

// MetricType is the type of its samples, for the README's metrics table (hack/docgen), which
// cannot see it from a collector with nothing to collect yet.
func (h *heartbeatAges) MetricType() string { return "gauge" }

func (h *heartbeatAges) Collect(ch chan<- prometheus.Metric) {
	s := h.source.Load()
	if s == nil {
		return
	}
	s.tracker.Ages(s.clock.Now(), func(node, config string, age time.Duration) {
		ch <- prometheus.MustNewConstMetric(h.desc, prometheus.GaugeValue, age.Seconds(), node, config)
	})
}
