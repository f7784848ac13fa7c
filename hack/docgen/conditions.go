package main

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Where a constant is documented: the kinds of conditions.go's "+docgen:" lines.
const (
	kindConfig   = "WindowsProxyConfig"
	kindNode     = "WindowsProxyNode"
	kindProblems = "failingNodes"
)

var knownKinds = []string{kindConfig, kindNode, kindProblems}

// conditionType is one documented condition type.
type conditionType struct {
	name  string // the Go constant
	value string
	kinds []string
	// meaning is the doc comment after "<name> is ".
	meaning string
}

// use is one condition a reason is set on, with the status it has then.
type use struct {
	condition, status string
}

// reason is one documented reason.
type reason struct {
	name, value string
	kinds       []string
	uses        []use
	meaning     string
}

// conditionDoc is everything conditions.go documents, in declaration order.
type conditionDoc struct {
	conditions []conditionType
	reasons    []reason
}

var (
	markerRE = regexp.MustCompile(`^\+docgen:(conditions|reasons)=([A-Za-z,]+)$`)
	// reasonRE is "ReasonX (Type=Status, ...): meaning" or "ReasonX: meaning".
	reasonRE = regexp.MustCompile(`^(\w+)(?: \(([^)]*)\))?[:.]\s*(.*)$`)
	useRE    = regexp.MustCompile(`^([A-Za-z]+)=(True|False|Unknown)$`)
)

// parseConditions reads the documented constants of path and checks that each follows the format
// conditions.go describes, so that an undocumented reason fails `go generate` instead of
// missing from the README.
func parseConditions(path string) (*conditionDoc, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	doc := &conditionDoc{}
	var errs []string
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		groupWhat, groupKinds, _ := marker(g.Doc)
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			what, kinds, text := marker(vs.Doc)
			if what == "" {
				what, kinds = groupWhat, groupKinds
			}
			for i, id := range vs.Names {
				if !id.IsExported() {
					continue
				}
				c, err := constant(fset, id, vs, i, what, kinds, text)
				if err != nil {
					errs = append(errs, err.Error())
					continue
				}
				switch v := c.(type) {
				case conditionType:
					doc.conditions = append(doc.conditions, v)
				case reason:
					doc.reasons = append(doc.reasons, v)
				}
			}
		}
	}
	errs = append(errs, doc.checkUses()...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s:\n  %s", path, strings.Join(errs, "\n  "))
	}
	return doc, nil
}

// constant reads the i-th name of vs as a condition type or a reason.
func constant(fset *token.FileSet, id *ast.Ident, vs *ast.ValueSpec, i int, what string, kinds []string, text string) (any, error) {
	at := fset.Position(id.Pos())
	prefix := map[string]string{"conditions": "Condition", "reasons": "Reason"}[what]
	if prefix == "" {
		return nil, fmt.Errorf("%s: %s: its const block has no +docgen: line", at, id.Name)
	}
	if !strings.HasPrefix(id.Name, prefix) {
		return nil, fmt.Errorf("%s: %s is in a +docgen:%s block but does not start with %s", at, id.Name, what, prefix)
	}
	if i >= len(vs.Values) {
		return nil, fmt.Errorf("%s: %s has no value", at, id.Name)
	}
	lit, ok := vs.Values[i].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return nil, fmt.Errorf("%s: %s is not a string literal", at, id.Name)
	}
	value, err := strconv.Unquote(lit.Value)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", at, id.Name, err)
	}
	if what == "conditions" {
		meaning, ok := strings.CutPrefix(text, id.Name+" is ")
		if !ok {
			return nil, fmt.Errorf("%s: the comment of %s must start with %q", at, id.Name, id.Name+" is ")
		}
		return conditionType{name: id.Name, value: value, kinds: kinds, meaning: meaning}, nil
	}
	m := reasonRE.FindStringSubmatch(text)
	if m == nil || m[1] != id.Name {
		return nil, fmt.Errorf("%s: the comment of %s must read %q", at, id.Name, id.Name+" (Type=Status, ...): what it means")
	}
	r := reason{name: id.Name, value: value, kinds: kinds, meaning: m[3]}
	if m[2] != "" {
		for _, u := range strings.Split(m[2], ",") {
			um := useRE.FindStringSubmatch(strings.TrimSpace(u))
			if um == nil {
				return nil, fmt.Errorf("%s: %s: %q is not Type=True|False|Unknown", at, id.Name, strings.TrimSpace(u))
			}
			r.uses = append(r.uses, use{condition: um[1], status: um[2]})
		}
	}
	if len(r.uses) == 0 && !slices.Equal(kinds, []string{kindProblems}) {
		return nil, fmt.Errorf("%s: %s names no condition, which only a failingNodes reason may do", at, id.Name)
	}
	return r, nil
}

// marker returns the "+docgen:" line of a comment, if any, and the comment's text without it, on
// one line.
func marker(cg *ast.CommentGroup) (what string, kinds []string, text string) {
	if cg == nil {
		return "", nil, ""
	}
	var lines []string
	for _, l := range strings.Split(cg.Text(), "\n") {
		l = strings.TrimSpace(l)
		if m := markerRE.FindStringSubmatch(l); m != nil {
			what, kinds = m[1], strings.Split(m[2], ",")
			continue
		}
		if l != "" {
			lines = append(lines, l)
		}
	}
	return what, kinds, strings.Join(lines, " ")
}

// checkUses reports kinds nobody knows and reasons that name a condition their kinds do not have.
func (d *conditionDoc) checkUses() []string {
	var errs []string
	for _, c := range d.conditions {
		errs = append(errs, unknownKinds(c.name, c.kinds)...)
	}
	for _, r := range d.reasons {
		errs = append(errs, unknownKinds(r.name, r.kinds)...)
		for _, u := range r.uses {
			c, ok := d.condition(u.condition)
			if !ok {
				errs = append(errs, fmt.Sprintf("%s names %s, which is no documented condition type", r.name, u.condition))
				continue
			}
			shared := slices.ContainsFunc(r.kinds, func(k string) bool { return slices.Contains(c.kinds, k) })
			if !shared {
				errs = append(errs, fmt.Sprintf("%s (%v) names %s, a condition of %v only", r.name, r.kinds, u.condition, c.kinds))
			}
		}
	}
	return errs
}

func unknownKinds(name string, kinds []string) []string {
	var errs []string
	for _, k := range kinds {
		if !slices.Contains(knownKinds, k) {
			errs = append(errs, fmt.Sprintf("%s: unknown kind %q (want one of %v)", name, k, knownKinds))
		}
	}
	return errs
}

func (d *conditionDoc) condition(value string) (conditionType, bool) {
	i := slices.IndexFunc(d.conditions, func(c conditionType) bool { return c.value == value })
	if i < 0 {
		return conditionType{}, false
	}
	return d.conditions[i], true
}

// conditionTable is one row per condition type of kind, with the reasons each status carries.
func (d *conditionDoc) conditionTable(kind string) string {
	var b strings.Builder
	b.WriteString("| condition | meaning | reasons |\n|---|---|---|\n")
	for _, c := range d.conditions {
		if !slices.Contains(c.kinds, kind) {
			continue
		}
		var parts []string
		for _, status := range []string{"True", "False", "Unknown"} {
			var names []string
			for _, r := range d.reasons {
				if slices.Contains(r.kinds, kind) && slices.Contains(r.uses, use{condition: c.value, status: status}) {
					names = append(names, "`"+r.value+"`")
				}
			}
			if len(names) > 0 {
				parts = append(parts, status+": "+strings.Join(names, ", "))
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", c.value, cell(c.meaning), strings.Join(parts, "; "))
	}
	return b.String()
}

// reasonTable is one row per reason of kind's conditions.
func (d *conditionDoc) reasonTable(kind string) string {
	var b strings.Builder
	b.WriteString("| reason | set on | meaning |\n|---|---|---|\n")
	for _, r := range d.reasonsByCondition(kind) {
		var on []string
		for _, u := range r.uses {
			if c, _ := d.condition(u.condition); slices.Contains(c.kinds, kind) {
				on = append(on, u.condition+"="+u.status)
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.value, strings.Join(on, ", "), cell(r.meaning))
	}
	return b.String()
}

// reasonsByCondition returns the reasons of kind ordered by the first of kind's conditions they
// are set on, then as declared.
func (d *conditionDoc) reasonsByCondition(kind string) []reason {
	order := map[string]int{}
	for _, c := range d.conditions {
		if slices.Contains(c.kinds, kind) {
			order[c.value] = len(order)
		}
	}
	first := func(r reason) int {
		i := len(order)
		for _, u := range r.uses {
			if o, ok := order[u.condition]; ok && o < i {
				i = o
			}
		}
		return i
	}
	var out []reason
	for _, r := range d.reasons {
		if slices.Contains(r.kinds, kind) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b reason) int { return cmp.Compare(first(a), first(b)) })
	return out
}

// problemTable lists the reasons of status.failingNodes.
func (d *conditionDoc) problemTable() string {
	var b strings.Builder
	b.WriteString("| reason | meaning |\n|---|---|\n")
	for _, r := range d.reasons {
		if slices.Contains(r.kinds, kindProblems) {
			fmt.Fprintf(&b, "| `%s` | %s |\n", r.value, cell(r.meaning))
		}
	}
	return b.String()
}

// cell makes text safe inside a Markdown table cell.
func cell(text string) string {
	return strings.ReplaceAll(text, "|", `\|`)
}
