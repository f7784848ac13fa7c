package hnstest

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update", false, "rewrite the claims table of docs/windows.md")

const (
	docsPath   = "../../../docs/windows.md"
	tableBegin = "<!-- BEGIN GENERATED: hns-claims (go test ./agent/hns/hnstest -run TestDocsClaimsTable -update; do not edit) -->"
	tableEnd   = "<!-- END GENERATED: hns-claims -->"
)

// TestDocsClaimsTable keeps the table of docs/windows.md equal to the claims the suite checks:
// a reader must see exactly what the simulator asserts, its source and where it was observed.
func TestDocsClaimsTable(t *testing.T) {
	raw, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	begin, end := strings.Index(doc, tableBegin), strings.Index(doc, tableEnd)
	if begin < 0 || end < begin {
		t.Fatalf("%s has no %q ... %q section", docsPath, tableBegin, tableEnd)
	}
	want := doc[:begin+len(tableBegin)] + "\n" + claimsTable() + doc[end:]
	if want == doc {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(docsPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the claims table of %s is stale: run go test ./agent/hns/hnstest -run TestDocsClaimsTable -update", docsPath)
}

func claimsTable() string {
	var b strings.Builder
	b.WriteString("| claim | what the simulator says HNS does | source | observed on real HNS |\n|---|---|---|---|\n")
	for _, c := range claims {
		observed := "not yet"
		if len(c.Observed) > 0 {
			observed = strings.Join(c.Observed, "; ")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", c.ID, cell(c.Says), cell(c.Source), cell(observed))
	}
	return b.String()
}

// cell escapes what would end a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
