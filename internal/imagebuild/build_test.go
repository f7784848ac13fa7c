package imagebuild

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/winproxy/winproxy/internal/testregistry"
)

// layerEntries reads a layer's tar headers in order.
func layerEntries(t *testing.T, l v1.Layer) []*tar.Header {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out []*tar.Header
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h)
	}
}

func TestBinaryLayerIsTheSameOnEveryBuild(t *testing.T) {
	for _, windows := range []bool{false, true} {
		a, err := binaryLayer([]byte("a binary"), "/winproxy-x", windows, types.OCILayer)
		if err != nil {
			t.Fatal(err)
		}
		b, err := binaryLayer([]byte("a binary"), "/winproxy-x", windows, types.OCILayer)
		if err != nil {
			t.Fatal(err)
		}
		da, _ := a.Digest()
		db, _ := b.Digest()
		if da != db {
			t.Errorf("windows=%t: two layers of the same file differ: %s, %s", windows, da, db)
		}
		for _, h := range layerEntries(t, a) {
			if !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
				t.Errorf("windows=%t: %s has time %v, owner %d:%d (%q:%q); want 1970 and root", windows, h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname)
			}
		}
	}
}

func TestLinuxLayerHoldsTheBinaryAtItsPath(t *testing.T) {
	l, err := binaryLayer([]byte("ELF"), "/winproxy-controller", false, types.OCILayer)
	if err != nil {
		t.Fatal(err)
	}
	hs := layerEntries(t, l)
	if len(hs) != 1 || hs[0].Name != "winproxy-controller" || hs[0].Mode != 0o755 || hs[0].Typeflag != tar.TypeReg {
		t.Fatalf("layer entries %+v, want the one executable winproxy-controller", hs)
	}
	if mt, _ := l.MediaType(); mt != types.OCILayer {
		t.Errorf("media type %s, want %s", mt, types.OCILayer)
	}
}

// A Windows layer is what containerd's Windows snapshotter unpacks: C:\ under Files/, registry
// hives under Hives/, and the security descriptor that lets any user run the file.
func TestWindowsLayerHasWindowsForm(t *testing.T) {
	l, err := binaryLayer([]byte("MZ"), "/winproxy-agent.exe", true, types.DockerLayer)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range layerEntries(t, l) {
		names = append(names, h.Name)
		if h.Name == "Files/winproxy-agent.exe" {
			// O:BUG:BU as a self-relative security descriptor: owner and group BUILTIN\Users.
			const want = "AQAAgBQAAAAkAAAAAAAAAAAAAAABAgAAAAAABSAAAAAhAgAAAQIAAAAAAAUgAAAAIQIAAA=="
			if got := h.PAXRecords["MSWINDOWS.rawsd"]; got != want {
				t.Errorf("MSWINDOWS.rawsd = %q, want %q", got, want)
			}
		}
	}
	if want := []string{"Files", "Files/winproxy-agent.exe", "Hives"}; !reflect.DeepEqual(names, want) {
		t.Errorf("entries %v, want %v (sorted)", names, want)
	}
}

// bases pushes the stand-in bases to a registry of the test's own.
func bases(t *testing.T) (controller, agent *remote.Descriptor, controllerRef, agentRef name.Digest) {
	t.Helper()
	reg := testregistry.Start()
	t.Cleanup(reg.Close)
	c, a, err := reg.PushBases()
	if err != nil {
		t.Fatal(err)
	}
	get := func(s string) (*remote.Descriptor, name.Digest) {
		ref, err := name.NewDigest(s)
		if err != nil {
			t.Fatal(err)
		}
		d, err := remote.Get(ref)
		if err != nil {
			t.Fatal(err)
		}
		return d, ref
	}
	controller, controllerRef = get(c)
	agent, agentRef = get(a)
	return controller, agent, controllerRef, agentRef
}

func TestOnBaseSetsHowTheContainerStarts(t *testing.T) {
	controllerDesc, agentDesc, controllerRef, agentRef := bases(t)
	for _, tc := range []struct {
		img       Image
		desc      *remote.Descriptor
		ref       name.Digest
		platform  v1.Platform
		layerType types.MediaType
	}{
		{Controller(controllerRef.String()), controllerDesc, controllerRef, v1.Platform{OS: "linux", Architecture: "arm64"}, types.OCILayer},
		{Agent(agentRef.String()), agentDesc, agentRef, v1.Platform{OS: "windows", Architecture: "amd64"}, types.DockerLayer},
	} {
		t.Run(tc.img.Name, func(t *testing.T) {
			base, _, err := platformImage(tc.ref, tc.desc, tc.platform)
			if err != nil {
				t.Fatal(err)
			}
			img, err := onBase(base, tc.img, []byte("binary"), map[string]string{"org.opencontainers.image.description": "ours"})
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			c := cf.Config
			if !reflect.DeepEqual(c.Entrypoint, tc.img.Entrypoint) || c.Cmd != nil || c.WorkingDir != tc.img.WorkingDir || c.User != tc.img.User {
				t.Errorf("config entrypoint %q cmd %q workdir %q user %q; want %q, no cmd, %q, %q", c.Entrypoint, c.Cmd, c.WorkingDir, c.User, tc.img.Entrypoint, tc.img.WorkingDir, tc.img.User)
			}
			if c.Labels["org.opencontainers.image.description"] != "ours" {
				t.Errorf("labels %v: ours do not replace the base's", c.Labels)
			}
			if !cf.Created.Equal(epoch) || cf.OSVersion != "" {
				t.Errorf("created %v, os.version %q; want 1970 and none", cf.Created, cf.OSVersion)
			}
			if n := len(cf.History); n != 2 || !cf.History[n-1].Created.Equal(epoch) || !strings.Contains(cf.History[n-1].CreatedBy, tc.img.Binary) {
				t.Errorf("history %+v, want the base's entry and one for %s dated 1970", cf.History, tc.img.Binary)
			}
			layers, _ := img.Layers()
			if mt, _ := layers[len(layers)-1].MediaType(); mt != tc.layerType {
				t.Errorf("the binary's layer is %s, want %s like the base's manifest", mt, tc.layerType)
			}
			data, err := ReadFile(img, tc.img.LayerPath(tc.platform))
			if err != nil || string(data) != "binary" {
				t.Errorf("ReadFile(%s) = %q, %v", tc.img.LayerPath(tc.platform), data, err)
			}
		})
	}
}

func TestPlatformImageSaysWhatTheBaseHas(t *testing.T) {
	controllerDesc, agentDesc, controllerRef, agentRef := bases(t)
	if _, _, err := platformImage(controllerRef, controllerDesc, v1.Platform{OS: "linux", Architecture: "s390x"}); err == nil ||
		!strings.Contains(err.Error(), "has no linux/s390x image (it has linux/amd64, linux/arm64/v8)") {
		t.Errorf("a platform the index lacks: %v", err)
	}
	if _, _, err := platformImage(agentRef, agentDesc, v1.Platform{OS: "linux", Architecture: "amd64"}); err == nil ||
		!strings.Contains(err.Error(), "is for windows/amd64, not linux/amd64") {
		t.Errorf("a single image of another platform: %v", err)
	}
	if _, digest, err := platformImage(agentRef, agentDesc, v1.Platform{OS: "windows", Architecture: "amd64"}); err != nil || digest.String() != agentRef.DigestStr() {
		t.Errorf("the single image of the platform: %s, %v", digest, err)
	}
}

func TestBuildRefusesABaseNotPinnedByDigest(t *testing.T) {
	_, err := Build(context.Background(), Options{ControllerBase: "registry.example/distroless:nonroot", BinDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "must be pinned by digest") {
		t.Errorf("Build with a base by tag: %v, want a refusal naming the digest", err)
	}
}

func TestWriteLayoutReplacesOnlyALayout(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteLayout(dir, nil); !errors.Is(err, errNotLayout) {
		t.Errorf("WriteLayout over a directory of other files: %v, want %v", err, errNotLayout)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Errorf("the refused directory lost its file: %v", err)
	}
	out := filepath.Join(dir, "layout")
	idx := Built{Image: Image{Name: "x"}, Index: mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: empty.Image})}
	for range 2 {
		if err := WriteLayout(out, []Built{idx}); err != nil {
			t.Fatalf("writing (and then replacing) a layout: %v", err)
		}
	}
}
