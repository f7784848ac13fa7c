package doclinks

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

const (
	// root is the repository, seen from this package.
	root = "../.."
	// dataplane is the page of data-plane rules, relative to root.
	dataplane = "docs/design/dataplane.md"
)

// citation matches a mention of a heading of a Markdown file, as code comments and docs write
// it: docs/design/dataplane.md#source-vip, ../compatibility.md#windows-server-and-hns,
// performance.md#what-is-measured.
var citation = regexp.MustCompile(`((?:\.{1,2}/|[A-Za-z0-9_-]+/)*[A-Za-z0-9_.-]+\.md)#([A-Za-z0-9_-]+)`)

// TestCitedAnchorsExist fails when a .go or .md file of the repository cites a heading of a
// Markdown file of the repository that the file does not have, above all the headings of
// docs/design/dataplane.md that code comments point to. A path is read relative to the citing
// file, else to the repository's root (how comments write it); a file that exists under neither
// (an upstream file) is not checked.
func TestCitedAnchorsExist(t *testing.T) {
	anchors := map[string]map[string]bool{}
	dataplaneCited := 0
	walkSources(t, func(path string, text []byte) {
		// Most files cite no heading; the regular expression on every line of every file was most
		// of this test's time.
		if !bytes.Contains(text, []byte(".md#")) {
			return
		}
		for _, line := range numberedLines(text) {
			if !strings.Contains(line.text, ".md#") {
				continue
			}
			for _, m := range citation.FindAllStringSubmatch(line.text, -1) {
				target, ok := resolve(path, m[1])
				if !ok {
					continue
				}
				if target == dataplane {
					dataplaneCited++
				}
				if anchors[target] == nil {
					anchors[target] = headingAnchors(t, filepath.Join(root, target))
				}
				if !anchors[target][m[2]] {
					t.Errorf("%s:%d cites %s#%s, which is not a heading of %s", path, line.n, m[1], m[2], target)
				}
			}
		}
	})
	if dataplaneCited == 0 {
		t.Errorf("no citation of %s found: is the pattern still right?", dataplane)
	}
}

// resolve finds the repository file a citation in the file at from (relative to root) names.
func resolve(from, cited string) (string, bool) {
	for _, dir := range []string{filepath.Dir(from), "."} {
		p := filepath.ToSlash(filepath.Clean(filepath.Join(dir, cited)))
		if strings.HasPrefix(p, "../") {
			continue
		}
		if fi, err := os.Stat(filepath.Join(root, p)); err == nil && !fi.IsDir() {
			return p, true
		}
	}
	return "", false
}

// mdLink matches a Markdown link's target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDataplaneLinksResolve fails when a link on the data-plane page leads to a file that does not
// exist or to a heading the target page does not have.
func TestDataplaneLinksResolve(t *testing.T) {
	page := filepath.Join(root, dataplane)
	text, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range numberedLines(text) {
		for _, m := range mdLink.FindAllStringSubmatch(line.text, -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s:%d links to %s, which does not exist", dataplane, line.n, target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !headingAnchors(t, path)[anchor] {
				t.Errorf("%s:%d links to %s, which has no heading #%s", dataplane, line.n, target, anchor)
			}
		}
	}
}

// outsideCitation matches a citation of a document outside the repository: the design brief
// the project started from ("winkernel-reference", "reference §7.4"), or any numbered section
// ("§7.4"), which no document of the repository has. RFC sections are fine.
var outsideCitation = regexp.MustCompile(`(?i)winkernel-reference|§\s*\d`)

// TestNoCitationOfOutsideDocuments fails when a file cites a document that lives outside the
// repository: the rules belong in docs/design/dataplane.md (or the doc of their topic), in the
// project's own words, so that a maintainer can follow every rule from the repository alone.
func TestNoCitationOfOutsideDocuments(t *testing.T) {
	walkSources(t, func(path string, text []byte) {
		if !outsideCitation.Match(text) { // one pass over the file; lines only where it cites
			return
		}
		for _, line := range numberedLines(text) {
			if m := outsideCitation.FindString(line.text); m != "" && !strings.Contains(line.text, "RFC") {
				t.Errorf("%s:%d cites %q, a document outside the repository; cite %s#<heading> (or another doc of the repository) instead", path, line.n, m, dataplane)
			}
		}
	})
}

// walkSources calls fn with every .go and .md file of the repository, skipping hidden
// directories (.git), bin/ (built tools and their sources) and this package, whose examples
// would match themselves.
func walkSources(t *testing.T, fn func(path string, text []byte)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || rel == "bin" || d.Name() == "node_modules" || filepath.ToSlash(rel) == "hack/doclinks") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".md") {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fn(filepath.ToSlash(rel), text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

type line struct {
	n    int
	text string
}

func numberedLines(text []byte) []line {
	var out []line
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for n := 1; sc.Scan(); n++ {
		out = append(out, line{n, sc.Text()})
	}
	return out
}

// headingAnchors returns the anchors GitHub gives the headings of a Markdown file: lower case,
// punctuation dropped, spaces turned into hyphens, and "-1", "-2", ... appended to repeats.
// Headings inside fenced code blocks are not headings.
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, l := range numberedLines(text) {
		s := strings.TrimSpace(l.text)
		if strings.HasPrefix(s, "```") || strings.HasPrefix(s, "~~~") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(s, "#") {
			continue
		}
		title := strings.TrimLeft(s, "#")
		if title == "" || title[0] != ' ' {
			continue
		}
		a := slug(title)
		if n := seen[a]; n > 0 {
			anchors[a+"-"+itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

func slug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(title)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func itoa(n int) string {
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}
