package conformance

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Differences are split into atoms, the smallest things that can differ:
// a load balancer that one side lacks, one field of a load balancer, one
// backend, one remote or created endpoint, a start-up error. Each atom must
// be explained by one entry of the allow-list (differences.go).

type atomKind string

const (
	atomError   atomKind = "start-up"
	atomLB      atomKind = "load balancer"
	atomField   atomKind = "field"
	atomBackend atomKind = "backend"
	atomRemote  atomKind = "remote endpoint"
	atomCreated atomKind = "created local endpoint"
)

type atom struct {
	Step     int
	Kind     atomKind
	Frontend Frontend
	Field    string // atomField
	IP       string // atomRemote, atomCreated
	// Up and Win render each side's value; "" when that side has none.
	Up, Win string
}

func (a atom) String() string {
	val := func(s string) string {
		if s == "" {
			return "(none)"
		}
		return s
	}
	switch a.Kind {
	case atomLB:
		return fmt.Sprintf("LB %s: upstream %s; winproxy %s", a.Frontend, val(a.Up), val(a.Win))
	case atomField:
		return fmt.Sprintf("LB %s %s: upstream %s, winproxy %s", a.Frontend, a.Field, val(a.Up), val(a.Win))
	case atomBackend:
		return fmt.Sprintf("LB %s backend: upstream %s, winproxy %s", a.Frontend, val(a.Up), val(a.Win))
	case atomRemote, atomCreated:
		return fmt.Sprintf("%s %s: upstream %s, winproxy %s", a.Kind, a.IP, val(a.Up), val(a.Win))
	}
	return fmt.Sprintf("%s: upstream %s, winproxy %s", a.Kind, val(a.Up), val(a.Win))
}

// atomize splits a step's differences into atoms.
func atomize(step int, diffs []Diff) []atom {
	var out []atom
	eps := func(e []CanonEP) string {
		var s []string
		for _, x := range e {
			s = append(s, x.String())
		}
		return strings.Join(s, "; ")
	}
	for _, d := range diffs {
		a := atom{Step: step, Frontend: d.Frontend, IP: d.IP}
		switch d.Kind {
		case DiffError:
			a.Kind, a.Up, a.Win = atomError, d.UpErr, d.WinErr
			out = append(out, a)
		case DiffLBUpstreamOnly:
			a.Kind, a.Up = atomLB, d.Up.String()
			out = append(out, a)
		case DiffLBWinproxyOnly:
			a.Kind, a.Win = atomLB, d.Win.String()
			out = append(out, a)
		case DiffLB:
			for _, f := range d.Fields {
				if f == "backends" {
					out = append(out, backendAtoms(a, d.Up.Backends, d.Win.Backends)...)
					continue
				}
				b := a
				b.Kind, b.Field = atomField, f
				b.Up, b.Win = fieldValue(*d.Up, f), fieldValue(*d.Win, f)
				out = append(out, b)
			}
		case DiffRemoteUpstreamOnly, DiffRemoteWinproxyOnly, DiffRemote:
			a.Kind, a.Up, a.Win = atomRemote, eps(d.UpEP), eps(d.WinEP)
			out = append(out, a)
		case DiffCreated:
			a.Kind, a.Up, a.Win = atomCreated, eps(d.UpEP), eps(d.WinEP)
			out = append(out, a)
		}
	}
	return out
}

func fieldValue(lb CanonLB, field string) string {
	switch field {
	case "internalPort":
		return strconv.Itoa(int(lb.InternalPort))
	case "flags":
		return strconv.Itoa(int(lb.Flags))
	case "portFlags":
		return strconv.Itoa(int(lb.PortFlags))
	case "distribution":
		return strconv.Itoa(int(lb.Distribution))
	case "sourceVIP":
		return lb.SourceVIP
	}
	return ""
}

// backendAtoms pairs the backends only one side has: a "gone X" upstream
// with X on winproxy's side (the endpoint of X was replaced), the rest one
// by one.
func backendAtoms(a atom, up, win []string) []atom {
	upOnly, winOnly := minus(up, win), minus(win, up)
	var out []atom
	for _, u := range upOnly {
		b := a
		b.Kind, b.Up = atomBackend, u
		if x, ok := strings.CutPrefix(u, "gone "); ok {
			if i := slices.Index(winOnly, x); i >= 0 {
				b.Win = x
				winOnly = slices.Delete(winOnly, i, i+1)
			}
		}
		out = append(out, b)
	}
	for _, w := range winOnly {
		b := a
		b.Kind, b.Win = atomBackend, w
		out = append(out, b)
	}
	return out
}

// minus is the multiset difference a - b.
func minus(a, b []string) []string {
	rest := slices.Clone(b)
	var out []string
	for _, x := range a {
		if i := slices.Index(rest, x); i >= 0 {
			rest = slices.Delete(rest, i, i+1)
			continue
		}
		out = append(out, x)
	}
	return out
}

// classify explains each atom of one step, adding to the counts by
// difference and returning the atoms nothing explains. verbose, if set,
// gets one line per atom.
func classify(x *stepCtx, atoms []atom, counts map[string]int, verbose func(string)) (unexplained []atom) {
	for i := range atoms {
		a := &atoms[i]
		id := ""
		for _, d := range allowList {
			if d.explains(x, a) {
				id = d.ID
				break
			}
		}
		if verbose != nil {
			verbose(fmt.Sprintf("step %d: %s\n    -> %s", x.step, a, cmp.Or(id, "UNEXPLAINED")))
		}
		if id == "" {
			unexplained = append(unexplained, *a)
			continue
		}
		counts[id]++
	}
	return unexplained
}
