// Command dashboard writes winproxy's Grafana dashboard, built in code with the Grafana Foundation
// SDK, to the chart (charts/winproxy/files/dashboards/winproxy.json), which ships it in a
// ConfigMap for Grafana's dashboard sidecar (dashboards.enabled). It runs from `make manifests`;
// `make verify` fails when the committed JSON is stale. The monitoring tests
// (test/monitoring) evaluate every query of the written file against a real Prometheus.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
)

func main() {
	out := flag.String("out", "charts/winproxy/files/dashboards/winproxy.json", "file the dashboard JSON is written to")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	d, err := build()
	if err != nil {
		return err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return err
	}
	if old, err := os.ReadFile(out); err == nil && bytes.Equal(old, b.Bytes()) {
		return nil
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}
