// Command crddesc rewrites CustomResourceDefinition files so that every schema description is
// prose, not the Go doc comment it came from: controller-gen keeps the comment's line breaks,
// which fall wherever the source was wrapped (about 100 columns), and `kubectl explain` prints
// them as they are, breaking sentences in the middle at any terminal width. Wrapped lines are
// joined into paragraphs; blank lines between paragraphs, list items and indented lines (code,
// tables) are kept. It runs from `make manifests`, after controller-gen, on the files it names:
//
//	go run ./hack/crddesc config/crd/bases/*.yaml
package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crddesc CRD.yaml...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := rewrite(path); err != nil {
			fmt.Fprintln(os.Stderr, "crddesc:", err)
			os.Exit(1)
		}
	}
}

func rewrite(path string) error {
	in, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := process(in)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if bytes.Equal(in, out) {
		return nil
	}
	return os.WriteFile(path, out, 0o644)
}

// documentStart begins every file controller-gen writes.
const documentStart = "---\n"

// process rewrites the descriptions of one CRD file. The file is decoded into plain maps and
// encoded again with sigs.k8s.io/yaml, as controller-gen encodes it, so nothing but the
// descriptions changes.
func process(in []byte) ([]byte, error) {
	var crd map[string]any
	if err := yaml.Unmarshal(in, &crd); err != nil {
		return nil, err
	}
	if crd["kind"] != "CustomResourceDefinition" {
		return nil, fmt.Errorf("not a CustomResourceDefinition (kind %v)", crd["kind"])
	}
	versions, _ := dig(crd, "spec", "versions").([]any)
	for _, v := range versions {
		if schema, ok := dig(v, "schema", "openAPIV3Schema").(map[string]any); ok {
			walk(schema)
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(in, []byte(documentStart)) {
		out = append([]byte(documentStart), out...)
	}
	return out, nil
}

// dig follows keys through nested maps; nil when one is missing.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// walk rewrites the description of schema and of every schema below it. Only string values of a
// "description" key are descriptions: a property may be named "description" too, and its value
// is a schema.
func walk(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if s, ok := child.(string); ok && k == "description" {
				v[k] = Paragraphs(s)
				continue
			}
			walk(child)
		}
	case []any:
		for _, child := range v {
			walk(child)
		}
	}
}

// listItem matches a line that starts a list item: "- ", "* " or "1. ".
var listItem = regexp.MustCompile(`^(?:[-*]|\d+[.)]) `)

// Paragraphs joins the wrapped lines of a doc comment: a line continues the one before it unless
// either is blank, it starts a list item, or either is indented (code, a table).
func Paragraphs(s string) string {
	lines := strings.Split(s, "\n")
	var b strings.Builder
	for i, line := range lines {
		if i > 0 {
			prev := lines[i-1]
			if continues(prev, line) {
				b.WriteByte(' ')
				b.WriteString(strings.TrimSpace(line))
				continue
			}
			b.WriteByte('\n')
		}
		b.WriteString(strings.TrimRight(line, " \t"))
	}
	return b.String()
}

func continues(prev, line string) bool {
	if strings.TrimSpace(prev) == "" || strings.TrimSpace(line) == "" {
		return false
	}
	if indented(prev) || indented(line) || listItem.MatchString(line) {
		return false
	}
	return true
}

func indented(line string) bool { return strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") }
