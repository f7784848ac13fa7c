package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// sectionRE matches one generated section of the README, markers included.
var sectionRE = regexp.MustCompile(`(?s)<!-- BEGIN GENERATED: ([a-z-]+)[^>]*-->\n.*?<!-- END GENERATED: ([a-z-]+) -->\n`)

// replaceSections rewrites, in readme, the body of each section named in sections. Every section
// must appear exactly once: a README that lost a marker fails instead of silently keeping stale
// text.
func replaceSections(readme []byte, sections map[string]string) ([]byte, error) {
	seen := map[string]int{}
	var errs []string
	out := sectionRE.ReplaceAllFunc(readme, func(m []byte) []byte {
		sub := sectionRE.FindSubmatch(m)
		name := string(sub[1])
		if name != string(sub[2]) {
			errs = append(errs, fmt.Sprintf("section %s ends with the END marker of %s", name, sub[2]))
			return m
		}
		seen[name]++
		body, ok := sections[name]
		if !ok {
			errs = append(errs, fmt.Sprintf("unknown generated section %s", name))
			return m
		}
		return fmt.Appendf(nil, "<!-- BEGIN GENERATED: %s (go generate ./api/...; do not edit) -->\n%s<!-- END GENERATED: %s -->\n", name, body, name)
	})
	for name := range sections {
		if seen[name] != 1 {
			errs = append(errs, fmt.Sprintf("section %s appears %d times, want once", name, seen[name]))
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return nil, fmt.Errorf("README: %s", strings.Join(errs, "; "))
	}
	return out, nil
}
