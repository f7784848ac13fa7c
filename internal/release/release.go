// Package release is `make release`: it builds both images (internal/imagebuild), pushes them,
// packages the chart with the release's version and the images' digests, pushes the chart as an
// OCI artifact, and writes an SBOM per platform image and a checksums file. It prints what it will
// do before it does anything, and with DryRun stops there.
package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/winproxy/winproxy/internal/imagebuild"
)

// Options say what to release and where.
type Options struct {
	// Build builds the images; its Version is the release's version.
	Build imagebuild.Options
	// Registry is where the images go: <Registry>/winproxy-controller and <Registry>/winproxy-agent.
	Registry string
	// ChartRepo is the OCI repository the chart is pushed under (default <Registry>/charts).
	ChartRepo string
	// ChartDir is the chart's source directory.
	ChartDir string
	// Helm is the helm binary that packages and pushes the chart.
	Helm string
	// OutDir receives the chart package, the SBOMs and the checksums; it must not hold files yet.
	OutDir string
	// PlainHTTP talks HTTP instead of HTTPS to the registries (a local test registry).
	PlainHTTP bool
	// DryRun prints the plan and stops.
	DryRun bool
	// Out receives the plan and the progress.
	Out io.Writer
}

// Run releases as o says.
func Run(ctx context.Context, o Options) error {
	p, err := newPlan(o)
	if err != nil {
		return err
	}
	if err := p.print(o.Out, o.ChartDir); err != nil {
		return err
	}
	if o.DryRun {
		fmt.Fprintln(o.Out, "DRY_RUN: stopping here; nothing was built or pushed.")
		return nil
	}
	if err := emptyOutDir(o.OutDir); err != nil {
		return err
	}
	o.Build.Remote = append(o.Build.Remote, remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithContext(ctx))
	fmt.Fprintln(o.Out, "==> Building the images")
	built, err := imagebuild.Build(ctx, o.Build)
	if err != nil {
		return err
	}
	fmt.Fprintln(o.Out, "==> Pushing the images")
	pushed, err := pushImages(o, p, built)
	if err != nil {
		return err
	}
	fmt.Fprintln(o.Out, "==> Writing the SBOMs")
	if err := writeSBOMs(o, p, built); err != nil {
		return err
	}
	fmt.Fprintln(o.Out, "==> Packaging and pushing the chart")
	pkg, err := releaseChart(ctx, o, p, pushed)
	if err != nil {
		return err
	}
	chartDigest, err := pushChart(ctx, o, p, pkg)
	if err != nil {
		return err
	}
	if err := writeChecksums(o.OutDir); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "==> Released %s\n", p.version)
	for _, img := range pushed {
		fmt.Fprintf(o.Out, "  %s:%s@%s\n", img.repo.Name(), img.tag, img.digest)
	}
	fmt.Fprintf(o.Out, "  %s:%s@%s\n", p.chartRef(), p.chartVersion, chartDigest)
	fmt.Fprintf(o.Out, "Install it with:\n  helm install winproxy %s --version %s --namespace winproxy-system\n", p.chartRef(), p.chartVersion)
	return nil
}

// pushImages pushes each built index under the release's tag, checks that the registry serves
// what was built, and records the images by digest in images.txt.
func pushImages(o Options, p plan, built []imagebuild.Built) ([]chartImage, error) {
	var out []chartImage
	var lines []string
	for i, b := range built {
		repo := p.images[i].repo
		tag := repo.Tag(p.version)
		fmt.Fprintf(o.Out, "  %s (%s)\n", tag, b.Digest)
		if err := remote.WriteIndex(tag, b.Index, o.Build.Remote...); err != nil {
			return nil, fmt.Errorf("pushing %s: %w", tag, err)
		}
		desc, err := remote.Head(tag, o.Build.Remote...)
		if err != nil {
			return nil, fmt.Errorf("reading back %s: %w", tag, err)
		}
		if desc.Digest != b.Digest {
			return nil, fmt.Errorf("%s is %s after the push, not the %s that was built", tag, desc.Digest, b.Digest)
		}
		key := strings.TrimPrefix(b.Image.Name, "winproxy-")
		out = append(out, chartImage{key: key, repo: repo, tag: p.version, digest: b.Digest.String()})
		lines = append(lines, fmt.Sprintf("%s:%s@%s\n", repo.Name(), p.version, b.Digest))
	}
	return out, os.WriteFile(filepath.Join(o.OutDir, "images.txt"), []byte(strings.Join(lines, "")), 0o644)
}

func writeSBOMs(o Options, p plan, built []imagebuild.Built) error {
	for i, b := range built {
		for _, bp := range b.Platforms {
			bom, err := sbom(p.images[i].repo, p.version, b, bp)
			if err != nil {
				return fmt.Errorf("SBOM of %s %s/%s: %w", b.Image.Name, bp.Platform.OS, bp.Platform.Architecture, err)
			}
			file := filepath.Join(o.OutDir, fmt.Sprintf("%s-%s-%s.cdx.json", b.Image.Name, bp.Platform.OS, bp.Platform.Architecture))
			f, err := os.Create(file)
			if err != nil {
				return err
			}
			err = encodeSBOM(f, bom)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("writing %s: %w", file, err)
			}
			fmt.Fprintf(o.Out, "  %s\n", file)
		}
	}
	return nil
}

// writeChecksums writes SHA256SUMS, in sha256sum's format, of every other file in dir.
func writeChecksums(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var lines []string // in the order of the file names, as os.ReadDir returns them
	for _, e := range entries {
		if e.IsDir() || e.Name() == "SHA256SUMS" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		lines = append(lines, hex.EncodeToString(sum[:])+"  "+e.Name()+"\n")
	}
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(strings.Join(lines, "")), 0o644)
}

// emptyOutDir makes dir, refusing one that holds files already (an earlier release's): a release
// never overwrites what another wrote.
func emptyOutDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s already holds files (an earlier release?): remove it or choose another RELEASE_DIR", dir)
	}
	return os.MkdirAll(dir, 0o755)
}
