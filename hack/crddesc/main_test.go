package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestParagraphs(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"one line":         {"dsr configures DSR.", "dsr configures DSR."},
		"wrapped sentence": {"enabled turns on DSR for ClusterIP load\nbalancers (kube-proxy --enable-dsr).", "enabled turns on DSR for ClusterIP load balancers (kube-proxy --enable-dsr)."},
		"paragraphs": {
			"first paragraph,\nwrapped.\n\nsecond\nparagraph.",
			"first paragraph, wrapped.\n\nsecond paragraph.",
		},
		"list items": {
			"strategy is one of:\n- Endpoint: the address of an\n  HNS endpoint\n- Static: from\nthe spec\n* Create\n1. first\n2) second",
			"strategy is one of:\n- Endpoint: the address of an\n  HNS endpoint\n- Static: from the spec\n* Create\n1. first\n2) second",
		},
		"indented code": {
			"run it:\n\n    kubectl get wpc\n    kubectl get wpn\nthen read.",
			"run it:\n\n    kubectl get wpc\n    kubectl get wpn\nthen read.",
		},
		"trailing spaces": {"a  \nb", "a b"},
		"a wrapped line starting with a dash starts an item": {"the range 1-10\n- 20 is taken for an item", "the range 1-10\n- 20 is taken for an item"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Paragraphs(tc.in); got != tc.want {
				t.Errorf("Paragraphs(%q) =\n%q\nwant\n%q", tc.in, got, tc.want)
			}
		})
	}
}

// TestProcessChangesOnlyDescriptions runs on the committed CRDs: the result differs from them in
// descriptions only, has no description with a line break inside a paragraph, and is stable.
func TestProcessChangesOnlyDescriptions(t *testing.T) {
	files, err := filepath.Glob("../../config/crd/bases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs: %v", err)
	}
	for _, f := range files {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out, err := process(in)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(out), documentStart) {
			t.Errorf("%s: the document start is lost", f)
		}
		again, err := process(out)
		if err != nil || string(again) != string(out) {
			t.Errorf("%s: a second run changes the file again (%v)", f, err)
		}
		before, after := decode(t, in), decode(t, out)
		var descriptions []string
		strip(before, nil)
		strip(after, &descriptions)
		if !reflect.DeepEqual(before, after) {
			t.Errorf("%s: something besides descriptions changed", f)
		}
		if len(descriptions) == 0 {
			t.Errorf("%s: no descriptions found", f)
		}
		for _, d := range descriptions {
			for _, p := range strings.Split(d, "\n\n") {
				if strings.Contains(p, "\n") {
					t.Errorf("%s: a paragraph keeps a line break: %q", f, p)
				}
			}
		}
	}
}

func TestProcessRefusesOtherKinds(t *testing.T) {
	if _, err := process([]byte("apiVersion: v1\nkind: ConfigMap\n")); err == nil {
		t.Error("a ConfigMap accepted")
	}
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// strip removes every description string, collecting them into got when it is not nil.
func strip(v any, got *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			if s, ok := c.(string); ok && k == "description" {
				if got != nil {
					*got = append(*got, s)
				}
				delete(v, k)
				continue
			}
			strip(c, got)
		}
	case []any:
		for _, c := range v {
			strip(c, got)
		}
	}
}
