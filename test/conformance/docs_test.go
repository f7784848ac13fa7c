package conformance

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the repository root, relative to this package.
const repoRoot = "../.."

// differencesDoc lists every deliberate difference; the allow-list points
// at its sections.
const differencesDoc = "docs/differences-from-kube-proxy.md"

// anchor is the fragment GitHub gives a heading.
func anchor(heading string) string {
	s := strings.ToLower(strings.TrimSpace(heading))
	s = regexp.MustCompile(`[^a-z0-9 _-]`).ReplaceAllString(s, "")
	return strings.ReplaceAll(s, " ", "-")
}

// Every entry of the allow-list has its section in the document, and every
// section of the document's list of differences has its entry: what the
// suite tolerates is exactly what users are told.
func TestAllowListIsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, differencesDoc))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n## Deliberate differences")
	if start < 0 {
		t.Fatalf("%s has no section \"## Deliberate differences\"", differencesDoc)
	}
	section := doc[start+1:]
	if end := strings.Index(section[2:], "\n## "); end >= 0 {
		section = section[:end+2]
	}
	documented := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^### (.+)$`).FindAllStringSubmatch(section, -1) {
		documented[anchor(m[1])] = m[1]
	}
	ids := map[string]bool{}
	for _, d := range allowList {
		if ids[d.ID] {
			t.Errorf("allow-list entry %q is listed twice", d.ID)
		}
		ids[d.ID] = true
		if got := anchor(d.Title); got != d.ID {
			t.Errorf("allow-list entry %q: its title %q has the anchor %q", d.ID, d.Title, got)
		}
		if _, ok := documented[d.ID]; !ok {
			t.Errorf("allow-list entry %q has no section \"### %s\" under Deliberate differences in %s", d.ID, d.Title, differencesDoc)
		}
	}
	for a, h := range documented {
		if !ids[a] {
			t.Errorf("%s documents %q, which the allow-list does not have (test/conformance/differences.go)", differencesDoc, h)
		}
	}
}
