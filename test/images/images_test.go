//go:build !windows

package images

import (
	"bytes"
	"debug/elf"
	"debug/pe"
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/winproxy/winproxy/internal/imagebuild"
	"github.com/winproxy/winproxy/internal/testregistry"
)

// want is what one image must be, beyond imagebuild's own description of it.
type want struct {
	image     imagebuild.Image
	platforms []v1.Platform
	// files are the image's whole file system: the stand-in base's and the binary.
	files []string
}

func wants() []want {
	return []want{
		{
			image:     imagebuild.Controller(""),
			platforms: []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}},
			files:     append(slices.Clone(testregistry.ControllerBaseFiles), "winproxy-controller"),
		},
		{
			image:     imagebuild.Agent(""),
			platforms: []v1.Platform{{OS: "windows", Architecture: "amd64"}},
			files:     append(slices.Clone(testregistry.AgentBaseFiles), "Files/winproxy-agent.exe", "Hives/"),
		},
	}
}

func TestImagesHoldWhatTheyShould(t *testing.T) {
	images := firstBuild(t)
	b, err := bases()
	if err != nil {
		t.Fatal(err)
	}
	baseOf := map[string]string{"winproxy-controller": b[0], "winproxy-agent": b[1]}
	for _, w := range wants() {
		t.Run(w.image.Name, func(t *testing.T) {
			got, ok := images[w.image.Name]
			if !ok {
				t.Fatalf("make images wrote no %s", w.image.Name)
			}
			var platforms []v1.Platform
			for _, m := range got.manifests {
				platforms = append(platforms, *m.Platform)
			}
			// No os.version: one agent image serves every Windows Server release.
			if !reflect.DeepEqual(platforms, w.platforms) {
				t.Errorf("index platforms %+v, want %+v", platforms, w.platforms)
			}
			for i, img := range got.images {
				checkConfig(t, w, img, strings.SplitN(baseOf[w.image.Name], "@", 2)[0])
				files, err := imagebuild.Files(img)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(files, w.files) {
					t.Errorf("%s files %q, want %q", w.platforms[i].Architecture, files, w.files)
				}
			}
		})
	}
}

func checkConfig(t *testing.T, w want, img v1.Image, baseName string) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if !reflect.DeepEqual(c.Entrypoint, w.image.Entrypoint) || c.Cmd != nil {
		t.Errorf("entrypoint %q, cmd %q; want %q and no cmd", c.Entrypoint, c.Cmd, w.image.Entrypoint)
	}
	if c.WorkingDir != w.image.WorkingDir || c.User != w.image.User {
		t.Errorf("working directory %q, user %q; want %q, %q", c.WorkingDir, c.User, w.image.WorkingDir, w.image.User)
	}
	if cf.OSVersion != "" {
		t.Errorf("os.version %q (the base's was %s): the image would serve one Windows release only", cf.OSVersion, testregistry.AgentBaseOSVersion)
	}
	if cf.Created.Unix() != 0 {
		t.Errorf("created %v, want 1970-01-01 (no build time in the image)", cf.Created)
	}
	for key, value := range map[string]string{
		"org.opencontainers.image.title":     w.image.Name,
		"org.opencontainers.image.version":   version,
		"org.opencontainers.image.revision":  commit,
		"org.opencontainers.image.source":    imagebuild.Source,
		"org.opencontainers.image.licenses":  "Apache-2.0",
		"org.opencontainers.image.base.name": baseName,
	} {
		if c.Labels[key] != value {
			t.Errorf("label %s = %q, want %q", key, c.Labels[key], value)
		}
	}
	if !strings.HasPrefix(c.Labels["org.opencontainers.image.base.digest"], "sha256:") {
		t.Errorf("label org.opencontainers.image.base.digest = %q, want the base's digest", c.Labels["org.opencontainers.image.base.digest"])
	}
}

// The controller binaries are static executables of their platform's architecture.
func TestControllerBinariesAreStaticForTheirArchitecture(t *testing.T) {
	got := firstBuild(t)["winproxy-controller"]
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for i, img := range got.images {
		arch := got.manifests[i].Platform.Architecture
		data, err := imagebuild.ReadFile(img, "winproxy-controller")
		if err != nil {
			t.Fatal(err)
		}
		f, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: not an ELF executable: %v", arch, err)
		}
		if f.Machine != machines[arch] {
			t.Errorf("%s: machine %v, want %v", arch, f.Machine, machines[arch])
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s: dynamically linked (has an interpreter); distroless static has no libc", arch)
			}
		}
	}
}

func TestAgentBinaryIsAWindowsAMD64Executable(t *testing.T) {
	got := firstBuild(t)["winproxy-agent"]
	data, err := imagebuild.ReadFile(got.images[0], "Files/winproxy-agent.exe")
	if err != nil {
		t.Fatal(err)
	}
	f, err := pe.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not a PE executable: %v", err)
	}
	if f.Machine != pe.IMAGE_FILE_MACHINE_AMD64 {
		t.Errorf("machine %#x, want IMAGE_FILE_MACHINE_AMD64", f.Machine)
	}
	oh, ok := f.OptionalHeader.(*pe.OptionalHeader64)
	if !ok || oh.Subsystem != pe.IMAGE_SUBSYSTEM_WINDOWS_CUI {
		t.Errorf("optional header %T, subsystem %v; want a 64-bit console program", f.OptionalHeader, oh)
	}
	if f.Characteristics&pe.IMAGE_FILE_EXECUTABLE_IMAGE == 0 {
		t.Error("not marked executable")
	}
}

func TestImagesAreReproducible(t *testing.T) {
	first := firstBuild(t)
	second := buildImages(t, "second")
	for name, a := range first {
		b := second[name]
		if a.digest != b.digest {
			t.Errorf("%s: two builds of one commit give %s and %s", name, a.digest, b.digest)
		}
		for i := range a.manifests {
			if a.manifests[i].Digest != b.manifests[i].Digest {
				t.Errorf("%s %s: %s, then %s", name, a.manifests[i].Platform.Architecture, a.manifests[i].Digest, b.manifests[i].Digest)
			}
		}
		t.Logf("%s: %s in both builds", name, a.digest)
	}
}
