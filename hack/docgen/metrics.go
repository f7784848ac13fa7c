package main

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/winproxy/winproxy/agent/daemon"
	"github.com/winproxy/winproxy/controllers"
)

// metric is one documented metric.
type metric struct {
	name, kind, help string
	labels           []string
	// component is "controller" or "agent".
	component string
}

// recorder is a prometheus.Registerer that keeps what is registered instead of serving it.
type recorder struct {
	collectors []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	r.collectors = append(r.collectors, cs...)
}

func (r *recorder) Unregister(prometheus.Collector) bool { return false }

// collectMetrics lists the metrics the controller and the agent register, sorted by name within
// each.
func collectMetrics() ([]metric, error) {
	var out []metric
	for _, c := range []struct {
		component string
		register  func(prometheus.Registerer)
	}{
		{"controller", controllers.RegisterMetrics},
		{"agent", func(reg prometheus.Registerer) { daemon.NewMetrics(reg) }},
	} {
		rec := &recorder{}
		c.register(rec)
		var ms []metric
		for _, col := range rec.collectors {
			m, err := describe(col)
			if err != nil {
				return nil, fmt.Errorf("%s metrics: %w", c.component, err)
			}
			m.component = c.component
			ms = append(ms, m)
		}
		slices.SortFunc(ms, func(a, b metric) int { return cmp.Compare(a.name, b.name) })
		out = append(out, ms...)
	}
	return out, nil
}

// descRE matches prometheus.Desc.String(), the only public view of a Desc's name, help and
// labels; a client_golang that formats it differently fails here rather than produce a wrong table.
var descRE = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), unit: "(?:[^"\\]|\\.)*", constLabels: \{[^}]*\}, variableLabels: \{([^}]*)\}\}$`)

// describe reads a collector that holds one metric family.
func describe(c prometheus.Collector) (metric, error) {
	ch := make(chan *prometheus.Desc, 8)
	c.Describe(ch)
	close(ch)
	var descs []*prometheus.Desc
	for d := range ch {
		descs = append(descs, d)
	}
	if len(descs) != 1 {
		return metric{}, fmt.Errorf("a collector describes %d metrics, want 1", len(descs))
	}
	s := descs[0].String()
	m := descRE.FindStringSubmatch(s)
	if m == nil {
		return metric{}, fmt.Errorf("cannot read %s", s)
	}
	name, err1 := strconv.Unquote(m[1])
	help, err2 := strconv.Unquote(m[2])
	if err1 != nil || err2 != nil {
		return metric{}, fmt.Errorf("cannot read %s", s)
	}
	var labels []string
	if m[3] != "" {
		labels = strings.Split(m[3], ",")
	}
	kind, err := kindOf(c)
	if err != nil {
		return metric{}, fmt.Errorf("%s: %w", name, err)
	}
	return metric{name: name, kind: kind, help: help, labels: labels}, nil
}

// kindOf is the Prometheus type of c: what it says it is, the concrete type of a vector, or else
// what the one metric c collects writes.
func kindOf(c prometheus.Collector) (string, error) {
	// A collector that computes its samples when scraped may have none yet: it says its type.
	if t, ok := c.(interface{ MetricType() string }); ok {
		return t.MetricType(), nil
	}
	switch c.(type) {
	case *prometheus.GaugeVec:
		return "gauge", nil
	case *prometheus.CounterVec:
		return "counter", nil
	case *prometheus.HistogramVec:
		return "histogram", nil
	case *prometheus.SummaryVec:
		return "summary", nil
	}
	ch := make(chan prometheus.Metric, 1)
	go func() { c.Collect(ch); close(ch) }()
	var kinds []string
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			return "", err
		}
		switch {
		case pb.Gauge != nil:
			kinds = append(kinds, "gauge")
		case pb.Counter != nil:
			kinds = append(kinds, "counter")
		case pb.Histogram != nil:
			kinds = append(kinds, "histogram")
		case pb.Summary != nil:
			kinds = append(kinds, "summary")
		}
	}
	if len(kinds) != 1 {
		return "", fmt.Errorf("cannot tell the type of %T", c)
	}
	return kinds[0], nil
}

func metricsTable(ms []metric) string {
	var b strings.Builder
	b.WriteString("| metric | type | component | what |\n|---|---|---|---|\n")
	for _, m := range ms {
		name := m.name
		if len(m.labels) > 0 {
			name += "{" + strings.Join(m.labels, ",") + "}"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name, m.kind, m.component, cell(m.help))
	}
	return b.String()
}
