package release

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/winproxy/winproxy/internal/imagebuild"
)

// plan is what a release does, worked out from the options before anything is built or pushed,
// so that every mistake in them is reported first and DRY_RUN=1 can show it all.
type plan struct {
	// version is VERSION: the images' tag and the chart's appVersion (its default image tag).
	version string
	// chartVersion is the chart's version: VERSION without its "v", as Helm's versions are.
	chartVersion string
	images       []plannedImage
	// chartRepo is the OCI repository the chart is pushed under; the chart is chartRepo/winproxy.
	chartRepo name.Repository
	outDir    string
}

type plannedImage struct {
	image imagebuild.Image
	repo  name.Repository
}

func newPlan(o Options) (plan, error) {
	if o.Registry == "" {
		return plan{}, fmt.Errorf("no registry: name the one to push to, e.g. make release REGISTRY=ghcr.io/YOU")
	}
	if strings.HasSuffix(o.Build.Version, "-dirty") {
		return plan{}, fmt.Errorf("VERSION %q is of a checkout with uncommitted changes: a release is built from a commit; commit them, or set VERSION", o.Build.Version)
	}
	if _, err := version.ParseSemantic(strings.TrimPrefix(o.Build.Version, "v")); err != nil {
		return plan{}, fmt.Errorf("VERSION %q is not a semantic version (v1.2.3, v1.2.3-rc.1): tag the commit (git tag v0.2.0) or set VERSION: %w", o.Build.Version, err)
	}
	p := plan{version: o.Build.Version, chartVersion: strings.TrimPrefix(o.Build.Version, "v"), outDir: o.OutDir}
	var opts []name.Option
	if o.PlainHTTP {
		opts = append(opts, name.Insecure)
	}
	for _, img := range o.Build.Images() {
		repo, err := name.NewRepository(strings.TrimSuffix(o.Registry, "/")+"/"+img.Name, opts...)
		if err != nil {
			return plan{}, fmt.Errorf("REGISTRY %q does not make an image name: %w", o.Registry, err)
		}
		if _, err := name.NewDigest(img.Base); err != nil {
			return plan{}, fmt.Errorf("base image %q of %s must be pinned by digest: %w", img.Base, img.Name, err)
		}
		p.images = append(p.images, plannedImage{image: img, repo: repo})
	}
	chartRepo := o.ChartRepo
	if chartRepo == "" {
		chartRepo = strings.TrimSuffix(o.Registry, "/") + "/charts"
	}
	var err error
	if p.chartRepo, err = name.NewRepository(strings.TrimPrefix(chartRepo, "oci://"), opts...); err != nil {
		return plan{}, fmt.Errorf("chart repository %q: %w", chartRepo, err)
	}
	return p, nil
}

// chartPackage is the file name helm package gives the chart.
func (p plan) chartPackage() string { return "winproxy-" + p.chartVersion + ".tgz" }

// chartRef is the chart's OCI reference, as helm install takes it.
func (p plan) chartRef() string { return "oci://" + p.chartRepo.Name() + "/winproxy" }

func (p plan) print(w io.Writer, chartDir string) error {
	fmt.Fprintf(w, "==> Release %s\n", p.version)
	fmt.Fprintf(w, "Images, built here from this checkout and pushed with the tag %s:\n", p.version)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, img := range p.images {
		var platforms []string
		for _, pl := range img.image.Platforms {
			platforms = append(platforms, pl.OS+"/"+pl.Architecture)
		}
		fmt.Fprintf(tw, "  %s:%s\t%s\ton %s\n", img.repo.Name(), p.version, strings.Join(platforms, ", "), img.image.Base)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "Chart: %s as winproxy %s (appVersion %s, both images by digest), pushed to %s:%s\n",
		chartDir, p.chartVersion, p.version, p.chartRef(), p.chartVersion)
	fmt.Fprintf(w, "Files, in %s:\n", p.outDir)
	fmt.Fprintf(w, "  %s (the chart), images.txt (the images by digest),\n", p.chartPackage())
	_, err := fmt.Fprintf(w, "  an SBOM of each image's platforms (CycloneDX JSON, <image>-<os>-<arch>.cdx.json), SHA256SUMS of them all\n")
	return err
}
