package upstream

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// hnslibPackages are the packages of github.com/Microsoft/hnslib that
// winkernel needs, directly or not. The others (internal/cni, regstate,
// runhcs) serve HCN namespaces only; the functions that use them are stubbed.
var hnslibPackages = []string{".", "hcn", "internal/hns", "internal/interop"}

// windowsOnlyPackages are imported by hnslib code that never runs here: a
// function whose body uses them becomes a panic.
var windowsOnlyPackages = map[string]bool{
	"github.com/Microsoft/hnslib/internal/cni":      true,
	"github.com/Microsoft/hnslib/internal/regstate": true,
	"github.com/Microsoft/hnslib/internal/runhcs":   true,
}

const (
	xsysWindows = "golang.org/x/sys/windows"
	// winshimPath replaces golang.org/x/sys/windows, which is empty on Linux.
	winshimPath = "github.com/Microsoft/hnslib/internal/winshim"
)

// winshim is the part of golang.org/x/sys/windows that hnslib's error
// handling uses: types and the Windows error codes it compares HNS results
// with (values as in x/sys/windows zerrors_windows.go). The error helpers
// run on Linux (winkernel classifies the fake HNS's errors with them), the
// calls that would produce such codes do not.
const winshim = `// Package windows stands in for golang.org/x/sys/windows when hnslib is
// compiled on Linux for the conformance suite. Generated; do not edit.
package windows

import "syscall"

type Errno = syscall.Errno

type Handle uintptr

type DLLError struct {
	Err     error
	ObjName string
	Msg     string
}

func (e *DLLError) Error() string { return e.Msg }
func (e *DLLError) Unwrap() error { return e.Err }

const (
	ERROR_GEN_FAILURE         syscall.Errno = 31
	ERROR_NOT_FOUND           syscall.Errno = 1168
	E_NOTIMPL                 Handle        = 0x80004001
	HCN_E_NETWORK_NOT_FOUND   Handle        = 0x803B0001
	HCN_E_ENDPOINT_NOT_FOUND  Handle        = 0x803B0002
	HCN_E_PORT_NOT_FOUND      Handle        = 0x803B000C
	HCN_E_PORT_ALREADY_EXISTS Handle        = 0x803B0013
	HCN_E_INVALID_IP          Handle        = 0x803B001E
	HCN_E_ADAPTER_NOT_FOUND   Handle        = 0x803B0022
)
`

// writeHnslib writes a Linux-buildable copy of hnslib (module directory
// src) to dst. Every file keeps its types and logic except:
//   - the //go:build windows constraint is dropped;
//   - zsyscall_windows.go files (the DLL calls) keep only their function
//     signatures, with bodies that panic;
//   - functions using Windows-only packages or syscall identifiers Linux
//     lacks panic too (HCN namespaces, UTF-16 conversion of HNS answers);
//   - golang.org/x/sys/windows becomes a small shim, syscall.Handle uintptr.
//
// None of the panicking functions is reached: winkernel talks to HNS through
// its HcnService interface, which the conformance driver backs with
// upstream's fake (pkg/proxy/winkernel/testing).
func writeHnslib(src, dst string) error {
	linuxSyscall, err := importer.ForCompiler(token.NewFileSet(), "source", nil).Import("syscall")
	if err != nil {
		return fmt.Errorf("loading package syscall: %w", err)
	}
	for _, pkg := range hnslibPackages {
		entries, err := os.ReadDir(filepath.Join(src, pkg))
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, pkg), 0o755); err != nil {
			return err
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(src, pkg, name))
			if err != nil {
				return err
			}
			out, err := patchHnslibFile(name, b, linuxSyscall.Scope())
			if err != nil {
				return fmt.Errorf("%s/%s: %w", pkg, name, err)
			}
			// A _windows.go name would keep the file out of a Linux build.
			name = strings.Replace(name, "_windows.go", "_stub.go", 1)
			if err := os.WriteFile(filepath.Join(dst, pkg, name), out, 0o644); err != nil {
				return err
			}
		}
	}
	shim := filepath.Join(dst, "internal", "winshim")
	if err := os.MkdirAll(shim, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(shim, "windows.go"), []byte(winshim), 0o644); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, "go.mod"), gomod, 0o644)
}

func patchHnslibFile(name string, src []byte, linuxSyscall *types.Scope) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	imports := map[string]string{} // local name -> path
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		local := filepath.Base(p)
		if imp.Name != nil {
			local = imp.Name.Name
		}
		imports[local] = p
		if p == xsysWindows {
			imp.Path.Value = strconv.Quote(winshimPath)
		}
	}
	zsyscall := name == "zsyscall_windows.go"
	var decls []ast.Decl
	for _, d := range f.Decls {
		fd, isFunc := d.(*ast.FuncDecl)
		switch {
		case zsyscall && !isFunc:
			// The DLL and procedure handles; only imports stay.
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.IMPORT {
				decls = append(decls, d)
			}
			continue
		case isFunc && fd.Body != nil && (zsyscall || usesWindowsOnly(fd.Body, imports, linuxSyscall)):
			fd.Body = panicBody(fd.Name.Name)
		}
		decls = append(decls, d)
	}
	f.Decls = decls
	// syscall.Handle, the type of HCN handles, does not exist on Linux; the
	// handles are never opened.
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok {
			if se, ok := ts.Type.(*ast.SelectorExpr); ok {
				if x, ok := se.X.(*ast.Ident); ok && imports[x.Name] == "syscall" && se.Sel.Name == "Handle" {
					ts.Type = ast.NewIdent("uintptr")
				}
			}
		}
		return true
	})
	dropBuildConstraint(f)
	pruneImports(f)
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// usesWindowsOnly reports whether body refers to a Windows-only package or
// to a syscall identifier that Linux's syscall package lacks.
func usesWindowsOnly(body *ast.BlockStmt, imports map[string]string, linuxSyscall *types.Scope) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		se, ok := n.(*ast.SelectorExpr)
		if !ok {
			return !found
		}
		x, ok := se.X.(*ast.Ident)
		if !ok {
			return !found
		}
		switch p := imports[x.Name]; {
		case windowsOnlyPackages[p]:
			found = true
		case p == "syscall" && linuxSyscall.Lookup(se.Sel.Name) == nil:
			found = true
		}
		return !found
	})
	return found
}

func panicBody(fn string) *ast.BlockStmt {
	msg := strconv.Quote("hnslib " + fn + " is not available in the conformance build: HNS is upstream's fake")
	return &ast.BlockStmt{List: []ast.Stmt{&ast.ExprStmt{X: &ast.CallExpr{
		Fun:  ast.NewIdent("panic"),
		Args: []ast.Expr{&ast.BasicLit{Kind: token.STRING, Value: msg}},
	}}}}
}

// dropBuildConstraint removes //go:build and // +build lines.
func dropBuildConstraint(f *ast.File) {
	for _, cg := range f.Comments {
		var keep []*ast.Comment
		for _, c := range cg.List {
			if !strings.HasPrefix(c.Text, "//go:build") && !strings.HasPrefix(c.Text, "// +build") {
				keep = append(keep, c)
			}
		}
		if len(keep) == 0 {
			keep = []*ast.Comment{{Slash: cg.Pos(), Text: "//"}}
		}
		cg.List = keep
	}
}

// pruneImports drops imports that stubbing left unused (a blank or dot
// import is kept).
func pruneImports(f *ast.File) {
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if se, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := se.X.(*ast.Ident); ok {
				used[x.Name] = true
			}
		}
		return true
	})
	keep := func(imp *ast.ImportSpec) bool {
		p, _ := strconv.Unquote(imp.Path.Value)
		local := filepath.Base(p)
		if p == winshimPath {
			local = "windows"
		}
		if imp.Name != nil {
			if imp.Name.Name == "_" || imp.Name.Name == "." {
				return true
			}
			local = imp.Name.Name
		}
		return used[local]
	}
	var specs []*ast.ImportSpec
	for _, imp := range f.Imports {
		if keep(imp) {
			specs = append(specs, imp)
		}
	}
	f.Imports = specs
	var decls []ast.Decl
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.IMPORT {
			decls = append(decls, d)
			continue
		}
		var ss []ast.Spec
		for _, s := range gd.Specs {
			if keep(s.(*ast.ImportSpec)) {
				ss = append(ss, s)
			}
		}
		if len(ss) > 0 {
			gd.Specs = ss
			decls = append(decls, gd)
		}
	}
	f.Decls = decls
}
