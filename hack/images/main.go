// Command images is `make images` and `make release`: it builds winproxy's two images with Go
// alone, no container engine (internal/imagebuild), and releases them with the chart
// (internal/release).
//
//	go run ./hack/images build   --out DIR [flags]   both images into an OCI image layout
//	go run ./hack/images release --registry REGISTRY [flags]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/winproxy/winproxy/internal/imagebuild"
	"github.com/winproxy/winproxy/internal/release"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "build" && os.Args[1] != "release") {
		fmt.Fprintln(os.Stderr, "usage: images build|release [flags] (see -h of each)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if os.Args[1] == "build" {
		err = build(ctx, os.Args[2:])
	} else {
		err = runRelease(ctx, os.Args[2:])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s failed: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// buildFlags are the flags of both commands that say what to build.
func buildFlags(fs *flag.FlagSet) *imagebuild.Options {
	o := &imagebuild.Options{Log: os.Stdout}
	fs.StringVar(&o.Root, "root", ".", "the module's root directory")
	fs.StringVar(&o.Version, "version", "dev", "the version in the images' labels (the Makefile's VERSION)")
	fs.StringVar(&o.Commit, "commit", "", "the commit in the images' labels (the Makefile's COMMIT)")
	fs.StringVar(&o.LDFlags, "ldflags", "-s -w", "go build -ldflags (the Makefile's LDFLAGS)")
	fs.StringVar(&o.ControllerBase, "controller-base", "", "base image of the controller, pinned by digest (default: "+imagebuild.ControllerBase+")")
	fs.StringVar(&o.AgentBase, "agent-base", "", "base image of the agent, pinned by digest (default: "+imagebuild.AgentBase+")")
	return o
}

func build(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	o := buildFlags(fs)
	out := fs.String("out", "bin/images", "the OCI image layout to write (replaced if it is one)")
	_ = fs.Parse(args)
	o.Remote = []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithContext(ctx)}
	var err error
	if o.BinDir, err = os.MkdirTemp("", "winproxy-images-"); err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(o.BinDir) }()
	built, err := imagebuild.Build(ctx, *o)
	if err != nil {
		return err
	}
	if err := imagebuild.WriteLayout(*out, built); err != nil {
		return err
	}
	return report(os.Stdout, built, *out)
}

func runRelease(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("release", flag.ExitOnError)
	o := release.Options{Out: os.Stdout}
	b := buildFlags(fs)
	fs.StringVar(&o.Registry, "registry", "", "where the images go: REGISTRY/winproxy-controller, REGISTRY/winproxy-agent")
	fs.StringVar(&o.ChartRepo, "chart-repo", "", "OCI repository of the chart (default: REGISTRY/charts)")
	fs.StringVar(&o.ChartDir, "chart", "charts/winproxy", "the chart's directory")
	fs.StringVar(&o.Helm, "helm", "helm", "the helm binary")
	fs.StringVar(&o.OutDir, "dist", "", "directory for the chart package, SBOMs and checksums (default: dist/release/VERSION)")
	fs.BoolVar(&o.PlainHTTP, "plain-http", false, "use HTTP, not HTTPS, with the registries (a local test registry)")
	fs.BoolVar(&o.DryRun, "dry-run", false, "print what would be done, and stop")
	_ = fs.Parse(args)
	if o.OutDir == "" {
		o.OutDir = filepath.Join("dist", "release", b.Version)
	}
	var err error
	if b.BinDir, err = os.MkdirTemp("", "winproxy-release-"); err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(b.BinDir) }()
	o.Build = *b
	return release.Run(ctx, o)
}
