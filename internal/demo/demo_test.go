//go:build !windows

package demo

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// TestDemoOnce runs `make demo DEMO_FLAGS=--once` in-process, so the demo cannot rot: it must reach
// Ready and show what it promises.
func TestDemoOnce(t *testing.T) {
	var out bytes.Buffer
	if err := Run(context.Background(), Options{Once: true, Out: &out}); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"win-2019  refused: FeatureGateDisabled",
		"DualStackDowngraded  True   OverlayNetwork",
		"--- win-2025 (Kubernetes v1.34.1, Windows Server 2025, HNS 15.5): 11 load balancers",
		"The config is Ready on every node.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	// The probe lines are padded to line up; only their words matter.
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`winproxy-controller +http://127\.0\.0\.1:\d+/metrics  200 OK`),
		regexp.MustCompile(`winproxy-agent-win-2019 +http://127\.0\.0\.1:\d+/metrics  200 OK`),
		regexp.MustCompile(`scrape_configs: \[\{job_name: winproxy-agent, .*labels: \{node: win-2025\}.*job_name: winproxy-controller-metrics`),
		regexp.MustCompile(`GET 127\.0\.2\.12:10256/healthz +200 \{"lastUpdated":`),
		regexp.MustCompile(`GET 127\.0\.2\.13:32000/ +200 \{"service":\{"namespace":"shop","name":"storefront"\},"localEndpoints":1,"serviceProxyHealthy":true\}`),
	} {
		if !want.MatchString(out.String()) {
			t.Errorf("demo output lacks a line matching %s:\n%s", want, out.String())
		}
	}
}
