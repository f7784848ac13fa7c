//go:build !windows

// Package images tests `make images` and `make release` the way a user runs them, offline: an OCI
// registry in the test process (on loopback) holds small stand-in bases that the test builds,
// since the real bases cannot be pulled here. The built images are checked setting by setting and
// file by file, built twice to compare digests, the controller binary taken out of its image is
// run against a real apiserver, and the released chart is installed from the registry.
package images

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/winproxy/winproxy/internal/testenv"
	"github.com/winproxy/winproxy/internal/testregistry"
)

var (
	env *testenv.Env
	reg *testregistry.Registry
	// work holds the builds' outputs and helm's and docker's (empty) configuration.
	work string
)

// The version and commit every build here is stamped with.
const (
	version = "v0.42.0-e2e.1"
	commit  = "0123456789abcdef0123456789abcdef01234567"
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	e, err := testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer e.Stop()
	env = e
	reg = testregistry.Start()
	defer reg.Close()
	if work, err = os.MkdirTemp("", "winproxy-images-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(work)
	return m.Run()
}

// bases are the stand-in bases, pushed once.
var bases = sync.OnceValues(func() ([2]string, error) {
	c, a, err := reg.PushBases()
	return [2]string{c, a}, err
})

// makeTarget runs `make TARGET VARS...` in the repository as a user would, with the stand-in
// bases and this package's version and commit, and returns its output.
func makeTarget(t *testing.T, target string, vars ...string) string {
	t.Helper()
	out, err := makeOutput(target, vars...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// makeOutput is makeTarget for a run that may fail.
func makeOutput(target string, vars ...string) (string, error) {
	b, err := bases()
	if err != nil {
		return "", err
	}
	args := append([]string{"--no-print-directory", "-C", env.RepoRoot, target,
		"CONTROLLER_BASE=" + b[0], "AGENT_BASE=" + b[1], "VERSION=" + version, "COMMIT=" + commit}, vars...)
	cmd := exec.Command("make", args...)
	// As from a shell: not as a sub-make of `make test`, whose MAKEFLAGS would pass its variables
	// and job server on; and with helm and docker configurations of its own, so nothing of the
	// user's leaks in.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, helmEnv()...)
	cmd.Env = append(cmd.Env, "DOCKER_CONFIG="+work+"/docker")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("make %s: %w\n%s", strings.Join(args[3:], " "), err, out.String())
	}
	return out.String(), nil
}

// helmEnv gives helm a configuration of the test's own.
func helmEnv() []string {
	return []string{"HELM_CONFIG_HOME=" + work + "/helm/config", "HELM_CACHE_HOME=" + work + "/helm/cache", "HELM_DATA_HOME=" + work + "/helm/data"}
}

// built is an image as read back from a `make images` layout: its index and its platforms'
// images, in the index's order.
type built struct {
	index     v1.ImageIndex
	digest    v1.Hash
	manifests []v1.Descriptor
	images    []v1.Image
}

// buildImages runs `make images` into a new layout and reads both images back.
func buildImages(t *testing.T, name string) map[string]built {
	t.Helper()
	dir := filepath.Join(work, name)
	makeTarget(t, "images", "IMAGES_DIR="+dir)
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]built{}
	for _, d := range m.Manifests {
		idx, err := top.ImageIndex(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		b := built{index: idx, digest: d.Digest, manifests: im.Manifests}
		for _, pd := range im.Manifests {
			img, err := idx.Image(pd.Digest)
			if err != nil {
				t.Fatal(err)
			}
			b.images = append(b.images, img)
		}
		out[d.Annotations["org.opencontainers.image.ref.name"]] = b
	}
	return out
}

// firstBuild is the build most tests look at; TestImagesAreReproducible builds again.
var (
	firstOnce  sync.Once
	firstBuilt map[string]built
)

func firstBuild(t *testing.T) map[string]built {
	t.Helper()
	firstOnce.Do(func() { firstBuilt = buildImages(t, "first") })
	if firstBuilt == nil {
		t.Fatal("the first make images failed (see the first test that ran it)")
	}
	return firstBuilt
}
