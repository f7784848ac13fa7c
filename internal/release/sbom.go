package release

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/uuid"
	"github.com/package-url/packageurl-go"

	"github.com/winproxy/winproxy/internal/imagebuild"
)

// An SBOM is written per platform image, since each carries its own binary: a CycloneDX BOM whose
// subject is the image (by digest) and whose components are the Go application and the modules
// and Go standard library compiled into it, read from the Go build info of the binary as the
// image holds it, so the SBOM describes exactly what was pushed.
//
// The BOM is built with cyclonedx-go, the CycloneDX project's Go model and encoder, from
// debug/buildinfo: cyclonedx-gomod's binary mode reads the same build info, but as a library it
// would bring go-git, an OpenPGP implementation and an SSH client into winproxy's module graph for
// a release tool. Nothing in the BOM depends on when it was made: no timestamp, and a serial
// number derived from the image's digest.
func sbom(repo name.Repository, version string, b imagebuild.Built, bp imagebuild.BuiltPlatform) (*cdx.BOM, error) {
	binary, err := imagebuild.ReadFile(bp.Image, b.Image.LayerPath(bp.Platform))
	if err != nil {
		return nil, err
	}
	info, err := buildinfo.Read(bytes.NewReader(binary))
	if err != nil {
		return nil, fmt.Errorf("reading the Go build info of %s: %w", b.Image.Binary, err)
	}
	image := imageComponent(repo, version, bp)
	app := appComponent(info, binary, bp)
	modules := moduleComponents(info)

	bom := cdx.NewBOM()
	bom.SerialNumber = "urn:uuid:" + uuid.NewSHA1(uuid.NameSpaceURL, []byte(image.BOMRef)).String()
	bom.Metadata = &cdx.Metadata{Component: &image, Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{tool()}}}
	components := append([]cdx.Component{app}, modules...)
	bom.Components = &components
	refs := make([]string, len(modules))
	for i, m := range modules {
		refs[i] = m.BOMRef
	}
	bom.Dependencies = &[]cdx.Dependency{
		{Ref: image.BOMRef, Dependencies: &[]string{app.BOMRef}},
		{Ref: app.BOMRef, Dependencies: &refs},
	}
	return bom, nil
}

// encodeSBOM writes bom as indented JSON.
func encodeSBOM(w io.Writer, bom *cdx.BOM) error {
	return cdx.NewBOMEncoder(w, cdx.BOMFileFormatJSON).SetPretty(true).Encode(bom)
}

func imageComponent(repo name.Repository, version string, bp imagebuild.BuiltPlatform) cdx.Component {
	purl := packageurl.NewPackageURL(packageurl.TypeOCI, "", repoBase(repo), bp.Digest.String(), packageurl.QualifiersFromMap(map[string]string{
		"repository_url": repo.Name(), "tag": version, "os": bp.Platform.OS, "arch": bp.Platform.Architecture,
	}), "").ToString()
	return cdx.Component{
		BOMRef: purl, PackageURL: purl, Type: cdx.ComponentTypeContainer,
		Name: repo.Name(), Version: version,
		Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: bp.Digest.Hex}},
		Properties: &[]cdx.Property{{Name: "winproxy:base", Value: bp.Base.String()}},
	}
}

func appComponent(info *debug.BuildInfo, binary []byte, bp imagebuild.BuiltPlatform) cdx.Component {
	sum := sha256.Sum256(binary)
	purl := golangPURL(info.Main.Path, info.Main.Version, map[string]string{"goos": bp.Platform.OS, "goarch": bp.Platform.Architecture},
		strings.TrimPrefix(strings.TrimPrefix(info.Path, info.Main.Path), "/"))
	props := []cdx.Property{{Name: "go:version", Value: info.GoVersion}}
	for _, s := range info.Settings {
		props = append(props, cdx.Property{Name: "go:build:" + s.Key, Value: s.Value})
	}
	return cdx.Component{
		BOMRef: purl, PackageURL: purl, Type: cdx.ComponentTypeApplication,
		Name: info.Path, Version: info.Main.Version,
		Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(sum[:])}},
		Properties: &props,
	}
}

// moduleComponents are the modules compiled into the binary, as they were built (a replacement
// in place of what it replaces), and the standard library of its Go release.
func moduleComponents(info *debug.BuildInfo) []cdx.Component {
	var out []cdx.Component
	for _, dep := range info.Deps {
		m := dep
		if dep.Replace != nil {
			m = dep.Replace
		}
		purl := golangPURL(m.Path, m.Version, nil, "")
		c := cdx.Component{BOMRef: purl, PackageURL: purl, Type: cdx.ComponentTypeLibrary, Name: m.Path, Version: m.Version}
		if dep.Replace != nil {
			c.Properties = &[]cdx.Property{{Name: "go:replaces", Value: dep.Path + "@" + dep.Version}}
		}
		out = append(out, c)
	}
	std := golangPURL("std", info.GoVersion, nil, "")
	return append(out, cdx.Component{BOMRef: std, PackageURL: std, Type: cdx.ComponentTypeLibrary, Name: "std", Version: info.GoVersion})
}

// golangPURL is the package URL of a Go module.
func golangPURL(module, version string, qualifiers map[string]string, subpath string) string {
	namespace, modName := "", module
	if i := strings.LastIndex(module, "/"); i >= 0 {
		namespace, modName = module[:i], module[i+1:]
	}
	q := map[string]string{"type": "module"}
	for k, v := range qualifiers {
		q[k] = v
	}
	return packageurl.NewPackageURL(packageurl.TypeGolang, namespace, modName, version, packageurl.QualifiersFromMap(q), subpath).ToString()
}

// tool names the library that wrote the BOM, at the version this program was built with.
func tool() cdx.Component {
	const path = "github.com/CycloneDX/cyclonedx-go"
	c := cdx.Component{Type: cdx.ComponentTypeLibrary, Name: path}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == path {
				c.Version = dep.Version
			}
		}
	}
	return c
}

func repoBase(repo name.Repository) string {
	return repo.RepositoryStr()[strings.LastIndex(repo.RepositoryStr(), "/")+1:]
}
