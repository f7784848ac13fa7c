// Command docgen writes the tables of README.md that must agree with the code: the condition types
// and reasons of both kinds, read from the doc comments of api/v1alpha1/conditions.go, and the
// metrics of the controller and the agent, read from the collectors they register. Each table
// sits between "<!-- BEGIN GENERATED: name -->" and "<!-- END GENERATED: name -->" in README.md.
// It runs from `go generate ./api/...` (see conditions.go); `make verify` fails when its output
// is not committed.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
)

func main() {
	readme := flag.String("readme", "README.md", "the README whose generated sections are rewritten")
	conditions := flag.String("conditions", "conditions.go", "the Go file that documents condition types and reasons")
	flag.Parse()
	if err := run(*readme, *conditions); err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
}

func run(readmePath, conditionsPath string) error {
	old, err := os.ReadFile(readmePath)
	if err != nil {
		return err
	}
	updated, err := render(old, conditionsPath)
	if err != nil {
		return err
	}
	if bytes.Equal(old, updated) {
		return nil
	}
	return os.WriteFile(readmePath, updated, 0o644)
}

// render returns readme with every generated section rewritten.
func render(readme []byte, conditionsPath string) ([]byte, error) {
	doc, err := parseConditions(conditionsPath)
	if err != nil {
		return nil, err
	}
	ms, err := collectMetrics()
	if err != nil {
		return nil, err
	}
	sections := map[string]string{
		"wpc-conditions":       doc.conditionTable(kindConfig),
		"wpc-reasons":          doc.reasonTable(kindConfig),
		"failing-node-reasons": doc.problemTable(),
		"wpn-conditions":       doc.conditionTable(kindNode),
		"wpn-reasons":          doc.reasonTable(kindNode),
		"metrics":              metricsTable(ms),
	}
	return replaceSections(readme, sections)
}
