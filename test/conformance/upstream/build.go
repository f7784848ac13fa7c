// Package upstream builds upstream kube-proxy's Windows proxier (winkernel)
// for Linux, so that the conformance suite can run it beside winproxy.
//
// Nothing of upstream is kept in this repository. At test time Driver
// copies k8s.io/kubernetes/pkg/proxy/winkernel (and its fake HNS) from the Go
// module cache into a temporary module, drops their //go:build windows
// lines, adds the driver of ./driver (which runs upstream's Proxier through
// its test constructor), and compiles it against a Linux-buildable copy of
// github.com/Microsoft/hnslib (see hnslib.go). Versions are pinned by
// hack/tools/winkernel/go.mod. The binary is cached per user, keyed by those
// versions and by the builder's own sources, so only the first run pays for
// the build.
package upstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// Module paths of what is built.
const (
	kubernetesModule = "k8s.io/kubernetes"
	hnslibModule     = "github.com/Microsoft/hnslib"
	winkernelPackage = "pkg/proxy/winkernel"
	// tempModule is the module path of the temporary module; driver.go
	// imports the fake through it.
	tempModule = "upstream"
)

// PinDir is where the pins live, relative to the repository root.
const PinDir = "hack/tools/winkernel"

//go:embed driver/*.go build.go hnslib.go
var sources embed.FS

// Pins are the versions hack/tools/winkernel/go.mod requires.
type Pins struct {
	Kubernetes string
	Hnslib     string
}

// ReadPins reads the pinned versions from gomod.
func ReadPins(gomod []byte) (Pins, error) {
	var p Pins
	var err error
	if p.Kubernetes, err = required(gomod, kubernetesModule); err != nil {
		return p, err
	}
	p.Hnslib, err = required(gomod, hnslibModule)
	return p, err
}

// required finds the version at which a go.mod requires module.
func required(gomod []byte, module string) (string, error) {
	re := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(module) + `\s+(v\S+)`)
	m := re.FindSubmatch(gomod)
	if m == nil {
		return "", fmt.Errorf("go.mod does not require %s", module)
	}
	return string(m[1]), nil
}

// Driver returns the path of the driver binary for the pins of repoRoot's
// hack/tools/winkernel, building it first if the cache has none. logf
// reports a build (which takes minutes on two cores).
func Driver(ctx context.Context, repoRoot string, logf func(format string, args ...any)) (string, error) {
	pinDir := filepath.Join(repoRoot, PinDir)
	gomod, err := os.ReadFile(filepath.Join(pinDir, "go.mod"))
	if err != nil {
		return "", err
	}
	gosum, err := os.ReadFile(filepath.Join(pinDir, "go.sum"))
	if err != nil {
		return "", err
	}
	pins, err := ReadPins(gomod)
	if err != nil {
		return "", err
	}
	key, err := cacheKey(gomod, gosum)
	if err != nil {
		return "", err
	}
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "winkernel", fmt.Sprintf("%s-hnslib-%s-%s", pins.Kubernetes, pins.Hnslib, key), "winkernel-driver")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	logf("Building upstream winkernel %s (hnslib %s) for Linux into %s; the first build takes a few minutes on 2 cores, later runs reuse it.",
		pins.Kubernetes, pins.Hnslib, filepath.Dir(bin))
	start := time.Now()
	if err := build(ctx, pinDir, gomod, gosum, pins, bin); err != nil {
		return "", err
	}
	logf("Built upstream winkernel in %s.", time.Since(start).Round(time.Second))
	return bin, nil
}

// cacheDir follows hack/build-k8s.sh: $WINPROXY_TOOL_CACHE, else the user
// cache directory's winproxy folder.
func cacheDir() (string, error) {
	if d := os.Getenv("WINPROXY_TOOL_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "winproxy"), nil
}

// cacheKey hashes everything the binary depends on besides the pinned
// module contents: the pins' go.mod and go.sum, this package's sources
// (builder and driver) and the Go toolchain.
func cacheKey(gomod, gosum []byte) (string, error) {
	h := sha256.New()
	h.Write(gomod)
	h.Write(gosum)
	h.Write([]byte(runtime.Version()))
	err := fs.WalkDir(sources, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := sources.ReadFile(path)
		h.Write([]byte(path))
		h.Write(b)
		return err
	})
	return hex.EncodeToString(h.Sum(nil))[:12], err
}

func build(ctx context.Context, pinDir string, gomod, gosum []byte, pins Pins, bin string) error {
	tmp, err := os.MkdirTemp("", "winproxy-winkernel-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }() // a scratch module; what is left is harmless
	if err := prepare(ctx, tmp, pinDir, gomod, gosum, pins, false); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	// Another test process may be building the same binary: each writes
	// its own file and renames it into place.
	out := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	if msg, err := goCmd(ctx, tmp, "build", "-o", out, "./cmd/driver"); err != nil {
		return fmt.Errorf("building upstream winkernel: %w\n%s", err, msg)
	}
	if err := os.Rename(out, bin); err != nil {
		return err
	}
	pruneOtherBuilds(filepath.Dir(bin))
	return nil
}

// pruneOtherBuilds removes the cached builds of other versions or sources
// (35 MB each) beside dir; only the current one is used.
func pruneOtherBuilds(dir string) {
	parent := filepath.Dir(dir)
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != filepath.Base(dir) {
			_ = os.RemoveAll(filepath.Join(parent, e.Name()))
		}
	}
}

// UpstreamTests runs upstream's own winkernel unit tests in the same
// Linux build, which shows that the patched hnslib and the fake behave as
// on Windows. It returns go test's output.
func UpstreamTests(ctx context.Context, repoRoot string) (string, error) {
	pinDir := filepath.Join(repoRoot, PinDir)
	gomod, err := os.ReadFile(filepath.Join(pinDir, "go.mod"))
	if err != nil {
		return "", err
	}
	gosum, err := os.ReadFile(filepath.Join(pinDir, "go.sum"))
	if err != nil {
		return "", err
	}
	pins, err := ReadPins(gomod)
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "winproxy-winkernel-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }() // a scratch module; what is left is harmless
	if err := prepare(ctx, tmp, pinDir, gomod, gosum, pins, true); err != nil {
		return "", err
	}
	out, err := goCmd(ctx, tmp, "test", "-count=1", "-v", "./winkernel/")
	return string(out), err
}

// prepare writes the temporary module into tmp: upstream's winkernel
// package and fake (with their tests if tests is set), the driver, and the
// patched hnslib.
func prepare(ctx context.Context, tmp, pinDir string, gomod, gosum []byte, pins Pins, tests bool) error {
	k8sDir, err := moduleDir(ctx, pinDir, kubernetesModule, pins.Kubernetes)
	if err != nil {
		return err
	}
	hnslibDir, err := moduleDir(ctx, pinDir, hnslibModule, pins.Hnslib)
	if err != nil {
		return err
	}
	mod := regexp.MustCompile(`(?m)^module\s+\S+`).ReplaceAll(gomod, []byte("module "+tempModule))
	mod = append(mod, []byte("\nreplace "+hnslibModule+" => ./hnslib\n")...)
	files := map[string][]byte{"go.mod": mod, "go.sum": gosum}
	if err := copyPackage(filepath.Join(k8sDir, winkernelPackage), filepath.Join(tmp, "winkernel"), tests); err != nil {
		return err
	}
	if err := copyPackage(filepath.Join(k8sDir, winkernelPackage, "testing"), filepath.Join(tmp, "winkernel", "testing"), false); err != nil {
		return err
	}
	if tests {
		// Upstream's tests import the fake by its upstream path.
		for _, name := range []string{"proxier_test.go", "hns_test.go"} {
			p := filepath.Join(tmp, "winkernel", name)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b = bytes.ReplaceAll(b, []byte(`"`+kubernetesModule+"/"+winkernelPackage+`/testing"`), []byte(`"`+tempModule+`/winkernel/testing"`))
			if err := os.WriteFile(p, b, 0o644); err != nil {
				return err
			}
		}
	}
	for name, dst := range map[string]string{"driver/driver.go": "winkernel/zz_conformance_driver.go", "driver/main.go": "cmd/driver/main.go"} {
		b, err := sources.ReadFile(name)
		if err != nil {
			return err
		}
		files[dst] = dropBuildLine(b)
	}
	for name, b := range files {
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	if err := writeHnslib(hnslibDir, filepath.Join(tmp, "hnslib")); err != nil {
		return fmt.Errorf("patching hnslib: %w", err)
	}
	return nil
}

func goCmd(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0", "GOOS=", "GOARCH=")
	return cmd.CombinedOutput()
}

// moduleDir returns the module cache directory of module@version,
// downloading it through the module proxy if needed.
func moduleDir(ctx context.Context, dir, module, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w\n%s", module, version, err, stderr.Bytes())
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", err
	}
	if m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", module, version, m.Error)
	}
	return m.Dir, nil
}

// copyPackage copies the Go files of a package (tests only if tests is
// set), without their build constraints, into dst.
func copyPackage(src, dst string, tests bool) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || (!tests && strings.HasSuffix(n, "_test.go")) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, n), dropBuildLine(b), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// dropBuildLine neutralises a file's //go:build line (upstream's are
// "windows", the driver's "ignore").
var buildLine = regexp.MustCompile(`(?m)^//go:build .*$`)

func dropBuildLine(b []byte) []byte { return buildLine.ReplaceAll(b, []byte("//")) }
