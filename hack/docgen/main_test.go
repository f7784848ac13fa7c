package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	readmePath     = "../../README.md"
	conditionsPath = "../../api/v1alpha1/conditions.go"
)

// TestREADMEIsUpToDate fails when README.md's generated tables differ from what the code
// documents: run `make generate` and commit the result.
func TestREADMEIsUpToDate(t *testing.T) {
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	got, err := render(readme, conditionsPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(readme) {
		t.Error("README.md's generated sections are stale: run 'make generate' and commit README.md")
	}
}

// TestEveryConstantIsInTheTables checks that each condition type and reason of conditions.go
// reaches the README.
func TestEveryConstantIsInTheTables(t *testing.T) {
	doc, err := parseConditions(conditionsPath)
	if err != nil {
		t.Fatal(err)
	}
	tables := doc.conditionTable(kindConfig) + doc.conditionTable(kindNode) + doc.reasonTable(kindConfig) + doc.reasonTable(kindNode) + doc.problemTable()
	for _, c := range doc.conditions {
		if !strings.Contains(tables, "`"+c.value+"`") {
			t.Errorf("condition %s is in no table", c.value)
		}
	}
	for _, r := range doc.reasons {
		if !strings.Contains(tables, "`"+r.value+"`") {
			t.Errorf("reason %s is in no table", r.value)
		}
	}
	if len(doc.reasons) < 40 {
		t.Errorf("only %d reasons parsed", len(doc.reasons))
	}
}

func TestMalformedDocumentationFails(t *testing.T) {
	for name, tc := range map[string]struct {
		src, wantErr string
	}{
		"reason without comment": {
			src:     "// +docgen:reasons=WindowsProxyConfig\nconst (\n\tReasonX = \"X\"\n)\n",
			wantErr: `the comment of ReasonX must read`,
		},
		"reason on an unknown condition": {
			src:     "// +docgen:conditions=WindowsProxyConfig\nconst (\n\t// ConditionA is True when a.\n\tConditionA = \"A\"\n)\n// +docgen:reasons=WindowsProxyConfig\nconst (\n\t// ReasonX (B=True): x.\n\tReasonX = \"X\"\n)\n",
			wantErr: `ReasonX names B, which is no documented condition type`,
		},
		"reason of another kind's condition": {
			src:     "// +docgen:conditions=WindowsProxyNode\nconst (\n\t// ConditionA is True when a.\n\tConditionA = \"A\"\n)\n// +docgen:reasons=WindowsProxyConfig\nconst (\n\t// ReasonX (A=True): x.\n\tReasonX = \"X\"\n)\n",
			wantErr: `ReasonX ([WindowsProxyConfig]) names A, a condition of [WindowsProxyNode] only`,
		},
		"block without marker": {
			src:     "const (\n\t// ReasonX (A=True): x.\n\tReasonX = \"X\"\n)\n",
			wantErr: `its const block has no +docgen: line`,
		},
		"condition comment in another form": {
			src:     "// +docgen:conditions=WindowsProxyConfig\nconst (\n\t// ConditionA: a.\n\tConditionA = \"A\"\n)\n",
			wantErr: `the comment of ConditionA must start with "ConditionA is "`,
		},
		"unknown status": {
			src:     "// +docgen:conditions=WindowsProxyConfig\nconst (\n\t// ConditionA is True when a.\n\tConditionA = \"A\"\n)\n// +docgen:reasons=WindowsProxyConfig\nconst (\n\t// ReasonX (A=Maybe): x.\n\tReasonX = \"X\"\n)\n",
			wantErr: `"A=Maybe" is not Type=True|False|Unknown`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "conditions.go")
			if err := os.WriteFile(path, []byte("package v1alpha1\n\n"+tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := parseConditions(path)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

func TestSectionsMustAllBeThere(t *testing.T) {
	readme := "# x\n<!-- BEGIN GENERATED: a -->\nold\n<!-- END GENERATED: a -->\n"
	got, err := replaceSections([]byte(readme), map[string]string{"a": "new\n"})
	if err != nil || !strings.Contains(string(got), "\nnew\n<!-- END GENERATED: a -->") {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := replaceSections([]byte(readme), map[string]string{"a": "", "b": ""}); err == nil || !strings.Contains(err.Error(), "section b appears 0 times") {
		t.Errorf("a missing section: %v", err)
	}
}

func TestMetricsOfBothComponents(t *testing.T) {
	ms, err := collectMetrics()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"winproxy_config_nodes":                "gauge",
		"winproxy_agent_syncs_total":           "counter",
		"winproxy_agent_sync_duration_seconds": "histogram",
		"winproxy_agent_remote_endpoints":      "gauge",
	}
	for _, m := range ms {
		if k, ok := want[m.name]; ok {
			if m.kind != k {
				t.Errorf("%s is a %s, want %s", m.name, m.kind, k)
			}
			delete(want, m.name)
		}
	}
	if len(want) > 0 {
		t.Errorf("metrics missing: %v", want)
	}
}
