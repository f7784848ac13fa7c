package main

import (
	"bytes"
	"strings"
	"testing"
)

func runAgent(args ...string) (string, error) {
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestPlanCommand(t *testing.T) {
	out, err := runAgent("plan", "-f", "../../docs/examples/plan-overlay-dsr.yaml")
	if err != nil || !strings.Contains(out, "LOAD BALANCERS (6)") {
		t.Errorf("plan: err %v, output:\n%s", err, out)
	}
	out, err = runAgent("plan", "-f", "../../docs/examples/plan-overlay-dsr.yaml", "-o", "json")
	if err != nil || !strings.Contains(out, `"schemaVersion": "winproxy.io/plan/v1"`) {
		t.Errorf("plan -o json: err %v, output:\n%s", err, out)
	}
	if _, err := runAgent("plan", "-f", "../../docs/examples/plan-overlay-dsr.yaml", "-o", "yaml"); err == nil {
		t.Error("-o yaml accepted")
	}
	if _, err := runAgent("plan"); err == nil {
		t.Error("missing -f accepted")
	}
}
