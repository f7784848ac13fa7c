//go:build !windows

package monitoring

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/winproxy/winproxy/internal/testenv"
)

// The chart's PrometheusRule passes promtool's checks (syntax, templates, rule lint), and its
// alerts pass the unit tests of testdata/alerts_test.yaml: each fires on its failure and stays
// silent when healthy. Every alert of the chart must have a test that makes it fire.
func TestAlertRules(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	promtool := filepath.Join(prometheusBinaries(t, root), "promtool")
	groups := chartRules(t, root)
	dir := t.TempDir()
	full, err := yaml.Marshal(groups)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "chart-rules.yaml"), full)
	checkRunbooks(t, root, groups)
	if out, err := exec.Command(promtool, "check", "rules", "--lint-fatal", filepath.Join(dir, "chart-rules.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}

	// The unit tests compare labels; the annotations (summary, description, runbook_url) are
	// checked above for their templates, and would only repeat the chart's prose here.
	for gi := range groups.Groups {
		for ri := range groups.Groups[gi].Rules {
			groups.Groups[gi].Rules[ri].Annots = nil
		}
	}
	stripped, err := yaml.Marshal(groups)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "rules.yaml"), stripped)
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "alerts_test.yaml"), tests)
	out, err := exec.Command(promtool, "test", "rules", filepath.Join(dir, "alerts_test.yaml")).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	t.Logf("promtool test rules:\n%s", out)

	var suite struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(tests, &suite); err != nil {
		t.Fatal(err)
	}
	fires := map[string]bool{}
	for _, tc := range suite.Tests {
		for _, a := range tc.AlertRuleTest {
			fires[a.Alertname] = fires[a.Alertname] || len(a.ExpAlerts) > 0
		}
	}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if !fires[r.Alert] {
				t.Errorf("alert %s has no test that makes it fire (testdata/alerts_test.yaml)", r.Alert)
			}
		}
	}
}

// checkRunbooks checks that every alert's runbook_url is a section of docs/troubleshooting.md of
// its own: a heading named after the alert.
func checkRunbooks(t *testing.T, root string, g ruleGroups) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if title, ok := strings.CutPrefix(line, "### "); ok {
			headings[strings.ToLower(strings.TrimSpace(title))] = true
		}
	}
	seen := map[string]bool{}
	for _, grp := range g.Groups {
		for _, r := range grp.Rules {
			_, anchor, _ := strings.Cut(r.Annots["runbook_url"], "docs/troubleshooting.md#")
			if anchor != strings.ToLower(r.Alert) || !headings[anchor] || seen[anchor] {
				t.Errorf("alert %s: runbook_url %q is not its own section of docs/troubleshooting.md (### %s)", r.Alert, r.Annots["runbook_url"], r.Alert)
			}
			seen[anchor] = true
		}
	}
}
