// Package imagebuild builds winproxy's images without a container engine: it compiles each
// binary with `go build` for each platform, puts it in one layer on a base image pinned by digest
// (go-containerregistry), and makes a multi-platform index of each image. The same commit, Go
// toolchain and options give the same digests: the binaries are built with -trimpath, and
// nothing the builder writes holds a time (everything is dated 1970-01-01) or depends on the
// order of a directory listing.
package imagebuild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Options say what to build and from what.
type Options struct {
	// Root is the Go module's root directory.
	Root string
	// Version and Commit go into the images' labels; LDFlags into `go build -ldflags` (the
	// Makefile's, which stamp the same version and commit into the binaries).
	Version, Commit, LDFlags string
	// ControllerBase and AgentBase replace the pinned bases when set (tests build small ones).
	ControllerBase, AgentBase string
	// BinDir receives the compiled binaries.
	BinDir string
	// Remote are the options for reading the bases (authentication, transport).
	Remote []remote.Option
	// Log receives a line per step; nil discards them.
	Log io.Writer
}

// Images are the images o builds.
func (o Options) Images() []Image {
	return []Image{Controller(o.ControllerBase), Agent(o.AgentBase)}
}

// Built is an image as built: its multi-platform index and what each platform's image holds.
type Built struct {
	Image  Image
	Index  v1.ImageIndex
	Digest v1.Hash
	// Platforms are in the order of Image.Platforms.
	Platforms []BuiltPlatform
}

// BuiltPlatform is the image of one platform.
type BuiltPlatform struct {
	Platform v1.Platform
	Image    v1.Image
	Digest   v1.Hash
	// Base is the base image of this platform, by digest.
	Base name.Digest
	// BinaryFile is the compiled binary the image holds, in Options.BinDir.
	BinaryFile string
}

// Build builds every image of o.
func Build(ctx context.Context, o Options) ([]Built, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	var out []Built
	for _, img := range o.Images() {
		b, err := buildImage(ctx, o, img)
		if err != nil {
			return nil, fmt.Errorf("building %s: %w", img.Name, err)
		}
		out = append(out, b)
	}
	return out, nil
}

func buildImage(ctx context.Context, o Options, img Image) (Built, error) {
	ref, err := name.NewDigest(img.Base)
	if err != nil {
		return Built{}, fmt.Errorf("base image %q must be pinned by digest (REPOSITORY[:TAG]@sha256:...): %w", img.Base, err)
	}
	desc, err := remote.Get(ref, append(o.Remote, remote.WithContext(ctx))...)
	if err != nil {
		return Built{}, fmt.Errorf("reading the base image: %w", err)
	}
	b := Built{Image: img}
	var adds []mutate.IndexAddendum
	for _, p := range img.Platforms {
		bp, err := buildPlatform(ctx, o, img, ref, desc, p)
		if err != nil {
			return Built{}, fmt.Errorf("%s: %w", platformString(p), err)
		}
		cf, err := bp.Image.ConfigFile()
		if err != nil {
			return Built{}, err
		}
		// The index's platform is the config's, without os.version (see onBase).
		bp.Platform = v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
		adds = append(adds, mutate.IndexAddendum{Add: bp.Image, Descriptor: v1.Descriptor{Platform: &bp.Platform}})
		b.Platforms = append(b.Platforms, bp)
	}
	indexType := types.OCIImageIndex
	if mt, err := b.Platforms[0].Image.MediaType(); err == nil && mt == types.DockerManifestSchema2 {
		indexType = types.DockerManifestList
	}
	b.Index = mutate.AppendManifests(mutate.IndexMediaType(empty.Index, indexType), adds...)
	if b.Digest, err = b.Index.Digest(); err != nil {
		return Built{}, err
	}
	fmt.Fprintf(o.Log, "%s: %s\n", img.Name, b.Digest)
	return b, nil
}

func buildPlatform(ctx context.Context, o Options, img Image, ref name.Digest, base *remote.Descriptor, p v1.Platform) (BuiltPlatform, error) {
	baseImg, baseDigest, err := platformImage(ref, base, p)
	if err != nil {
		return BuiltPlatform{}, err
	}
	bp := BuiltPlatform{Base: ref.Context().Digest(baseDigest.String())}
	bp.BinaryFile = filepath.Join(o.BinDir, fmt.Sprintf("%s-%s-%s%s", img.Name, p.OS, p.Architecture, path.Ext(img.Binary)))
	fmt.Fprintf(o.Log, "%s: go build %s for %s\n", img.Name, img.Package, platformString(p))
	if err := compile(ctx, o, img.Package, bp.BinaryFile, p); err != nil {
		return BuiltPlatform{}, err
	}
	data, err := os.ReadFile(bp.BinaryFile)
	if err != nil {
		return BuiltPlatform{}, err
	}
	labels := map[string]string{
		"org.opencontainers.image.title":       img.Name,
		"org.opencontainers.image.description": img.Description,
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.revision":    o.Commit,
		"org.opencontainers.image.base.name":   strings.SplitN(img.Base, "@", 2)[0],
		"org.opencontainers.image.base.digest": baseDigest.String(),
	}
	if bp.Image, err = onBase(baseImg, img, data, labels); err != nil {
		return BuiltPlatform{}, err
	}
	bp.Digest, err = bp.Image.Digest()
	return bp, err
}

// platformImage is the base's image for platform p: the index entry that satisfies p (any
// variant or os.version), or the base itself when it is a single image of that platform.
func platformImage(ref name.Digest, base *remote.Descriptor, p v1.Platform) (v1.Image, v1.Hash, error) {
	if !base.MediaType.IsIndex() {
		img, err := base.Image()
		if err != nil {
			return nil, v1.Hash{}, err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, v1.Hash{}, err
		}
		if !cf.Platform().Satisfies(p) {
			return nil, v1.Hash{}, fmt.Errorf("base image %s is for %s, not %s", ref, platformString(*cf.Platform()), platformString(p))
		}
		return img, base.Digest, nil
	}
	idx, err := base.ImageIndex()
	if err != nil {
		return nil, v1.Hash{}, err
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		return nil, v1.Hash{}, err
	}
	var has []string
	for _, m := range manifest.Manifests {
		if m.Platform == nil {
			continue
		}
		if m.Platform.Satisfies(p) {
			img, err := idx.Image(m.Digest)
			return img, m.Digest, err
		}
		has = append(has, platformString(*m.Platform))
	}
	return nil, v1.Hash{}, fmt.Errorf("base image %s has no %s image (it has %s)", ref, platformString(p), strings.Join(has, ", "))
}

// compile builds pkg for platform p into out the way a release wants it: static (no cgo),
// -trimpath (no paths of the build machine), the baseline instruction set of the architecture
// (the images run on any CPU of it, and the build does not depend on the environment's GOAMD64).
func compile(ctx context.Context, o Options, pkg, out string, p v1.Platform) error {
	ldflags := o.LDFlags
	if ldflags == "" {
		ldflags = "-s -w"
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = o.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture, "GOAMD64=v1", "GOARM64=v8.0")
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, output)
	}
	return nil
}

// onBase is base with the binary in a layer of its own and img's config: entrypoint, working
// directory, user, labels added to the base's; no Cmd (the base's would become the binary's
// arguments), a fixed creation time, and no os.version: the base's os.version would restrict a
// Windows image to one Windows Server release, which a HostProcess container does not need.
func onBase(base v1.Image, img Image, binary []byte, labels map[string]string) (v1.Image, error) {
	mt, err := base.MediaType()
	if err != nil {
		return nil, err
	}
	layerType := types.OCILayer
	if mt == types.DockerManifestSchema2 {
		layerType = types.DockerLayer
	}
	cf, err := base.ConfigFile()
	if err != nil {
		return nil, err
	}
	layer, err := binaryLayer(binary, img.Binary, cf.OS == "windows", layerType)
	if err != nil {
		return nil, err
	}
	withLayer, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{
		Created:   v1.Time{Time: epoch},
		CreatedBy: fmt.Sprintf("COPY %s %s # make images", path.Base(img.Binary), img.Binary),
	}})
	if err != nil {
		return nil, err
	}
	if cf, err = withLayer.ConfigFile(); err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: epoch}
	cf.OSVersion = ""
	cf.Config.Entrypoint = img.Entrypoint
	cf.Config.Cmd = nil
	cf.Config.WorkingDir = img.WorkingDir
	cf.Config.User = img.User
	all := maps.Clone(cf.Config.Labels)
	if all == nil {
		all = map[string]string{}
	}
	maps.Copy(all, labels)
	cf.Config.Labels = all
	return mutate.ConfigFile(withLayer, cf)
}

func platformString(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// errNotLayout is returned when an output directory holds something other than an image layout.
var errNotLayout = errors.New("exists and is not an OCI image layout; not overwriting it")
