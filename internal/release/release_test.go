package release

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/winproxy/winproxy/internal/imagebuild"
)

func options(registry, version string) Options {
	return Options{Registry: registry, Build: imagebuild.Options{Version: version}, ChartDir: "charts/winproxy", OutDir: "dist/x"}
}

// Mistakes in the options are found before anything is built, each with what to do about it.
func TestPlanRefusesWhatCannotBeReleased(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no registry", options("", "v1.2.3"), "make release REGISTRY=ghcr.io/YOU"},
		{"a commit for a version", options("ghcr.io/acme", "b72d4a5"), "tag the commit (git tag v0.2.0) or set VERSION"},
		{"uncommitted changes", options("ghcr.io/acme", "v0.2.0-dirty"), "a checkout with uncommitted changes"},
		{"a registry that makes no name", options("ghcr.io/Acme Corp", "v1.2.3"), `REGISTRY "ghcr.io/Acme Corp" does not make an image name`},
		{"a base by tag", func() Options {
			o := options("ghcr.io/acme", "v1.2.3")
			o.Build.AgentBase = "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0"
			return o
		}(), "of winproxy-agent must be pinned by digest"},
	} {
		if _, err := newPlan(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

func TestPlanNamesEverythingItWillDo(t *testing.T) {
	p, err := newPlan(options("registry.example:5000/team/", "v0.3.0-rc.1"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := p.print(&out, "charts/winproxy"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"registry.example:5000/team/winproxy-controller:v0.3.0-rc.1  linux/amd64, linux/arm64  on " + imagebuild.ControllerBase,
		"registry.example:5000/team/winproxy-agent:v0.3.0-rc.1       windows/amd64             on " + imagebuild.AgentBase,
		"as winproxy 0.3.0-rc.1 (appVersion v0.3.0-rc.1, both images by digest), pushed to oci://registry.example:5000/team/charts/winproxy:0.3.0-rc.1",
		"Files, in dist/x:", "winproxy-0.3.0-rc.1.tgz", "SHA256SUMS",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the plan lacks %q:\n%s", want, out.String())
		}
	}
}

func TestEditYAMLSetsValuesAndKeepsComments(t *testing.T) {
	file := filepath.Join(t.TempDir(), "values.yaml")
	in := "# The top.\ncontroller:\n  image:\n    # -- Registry.\n    registry: ghcr.io\n    digest: \"\"\n  list:\n    - a\n"
	if err := os.WriteFile(file, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := editYAML(file, map[string]string{"controller.image.registry": "127.0.0.1:5000", "controller.image.digest": "sha256:00"}); err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(file)
	for _, want := range []string{"# The top.", "# -- Registry.", `registry: "127.0.0.1:5000"`, `digest: "sha256:00"`, "- a"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("edited file lacks %q:\n%s", want, out)
		}
	}
	if err := editYAML(file, map[string]string{"controller.image.tagg": "x"}); err == nil || !strings.Contains(err.Error(), "no controller.image.tagg") {
		t.Errorf("a key the file lacks: %v", err)
	}
	if err := editYAML(file, map[string]string{"controller.image": "x"}); err == nil || !strings.Contains(err.Error(), "not a single value") {
		t.Errorf("a mapping: %v", err)
	}
}

func TestChecksumsAreSha256sumsFormat(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"b.json": "b", "a.tgz": "a"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // the second run ignores the first's SHA256SUMS
		if err := writeChecksums(dir); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	want := "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  a.tgz\n" +
		"3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d  b.json\n"
	if string(got) != want {
		t.Errorf("SHA256SUMS:\n%s\nwant:\n%s", got, want)
	}
}

func TestOutDirIsNeverOverwritten(t *testing.T) {
	dir := t.TempDir()
	if err := emptyOutDir(filepath.Join(dir, "new", "v1")); err != nil {
		t.Errorf("a new directory: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := emptyOutDir(dir); err == nil || !strings.Contains(err.Error(), "already holds files") {
		t.Errorf("a directory with files: %v", err)
	}
}

// The SBOM of an image lists the Go modules compiled into the binary it holds; the release
// command's own binary stands in for it (a test binary records no modules).
func TestSBOMListsTheModulesOfTheBinaryInTheImage(t *testing.T) {
	binary := filepath.Join(t.TempDir(), "images")
	if out, err := exec.Command("go", "build", "-o", binary, "../../hack/images").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	img := imagebuild.Controller("")
	layer := static.NewLayer(tarOf(t, "winproxy-controller", data), types.DockerUncompressedLayer)
	withBinary, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	digest, _ := withBinary.Digest()
	platform := v1.Platform{OS: "linux", Architecture: "arm64"}
	base, err := name.NewDigest(img.Base)
	if err != nil {
		t.Fatal(err)
	}
	bp := imagebuild.BuiltPlatform{Platform: platform, Image: withBinary, Digest: digest, Base: base}
	repo, _ := name.NewRepository("registry.example/team/winproxy-controller")
	bom, err := sbom(repo, "v1.2.3", imagebuild.Built{Image: img}, bp)
	if err != nil {
		t.Fatal(err)
	}
	if c := bom.Metadata.Component; c.Type != cdx.ComponentTypeContainer || c.Name != "registry.example/team/winproxy-controller" ||
		!strings.HasPrefix(c.PackageURL, "pkg:oci/winproxy-controller@sha256%3A"+digest.Hex) {
		t.Errorf("the BOM's subject is %+v, want the image by digest", c)
	}
	byName := map[string]cdx.Component{}
	for _, c := range *bom.Components {
		byName[c.Name] = c
	}
	for _, mod := range []string{"github.com/CycloneDX/cyclonedx-go", "github.com/google/go-containerregistry", "std"} {
		if _, ok := byName[mod]; !ok {
			t.Errorf("no component for %s, which the binary holds", mod)
		}
	}
	app := (*bom.Components)[0]
	if app.Type != cdx.ComponentTypeApplication || !strings.Contains(app.PackageURL, "goarch=arm64") || !strings.Contains(app.PackageURL, "goos=linux") {
		t.Errorf("the application component %+v does not name its platform", app)
	}
	again, _ := sbom(repo, "v1.2.3", imagebuild.Built{Image: img}, bp)
	if again.SerialNumber != bom.SerialNumber {
		t.Errorf("the serial number changes between two SBOMs of one image: %s, %s", bom.SerialNumber, again.SerialNumber)
	}
}
