// Package testregistry is an OCI registry inside the test process, on loopback
// (go-containerregistry's pkg/registry, in memory), with small stand-ins for winproxy's base
// images: the real ones cannot be pulled where the tests run, and a test that builds its own bases
// knows every file and setting they bring.
package testregistry

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Registry is a running registry.
type Registry struct {
	// Host is its address, 127.0.0.1:PORT; it speaks plain HTTP.
	Host   string
	server *httptest.Server
}

// Start starts a registry on a free loopback port.
func Start() *Registry {
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	return &Registry{Host: strings.TrimPrefix(s.URL, "http://"), server: s}
}

// Close stops the registry.
func (r *Registry) Close() { r.server.Close() }

// Catalog lists the repositories the registry holds.
func (r *Registry) Catalog() ([]string, error) {
	reg, err := name.NewRegistry(r.Host, name.Insecure)
	if err != nil {
		return nil, err
	}
	return remote.Catalog(context.Background(), reg)
}

// The stand-ins' files, as imagebuild.Files lists them.
var (
	// ControllerBaseFiles stand in for distroless static: the nonroot user's passwd and group
	// entries and home.
	ControllerBaseFiles = []string{"etc/", "etc/group", "etc/passwd", "home/", "home/nonroot/"}
	// AgentBaseFiles stand in for the HostProcess base image: a licence under Files/ (C:\).
	AgentBaseFiles = []string{"Files/", "Files/License.txt"}
)

// AgentBaseOSVersion is the stand-in agent base's os.version, which the built image must not keep.
const AgentBaseOSVersion = "10.0.17763.6893"

// PushBases pushes the stand-in bases and returns their references, pinned by digest: the
// controller's an OCI index for linux/amd64 and linux/arm64/v8 (as distroless's), the agent's a
// single Docker image for windows/amd64 (as the HostProcess base's v1.0.0).
func (r *Registry) PushBases() (controller, agent string, err error) {
	var adds []mutate.IndexAddendum
	for _, p := range []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}} {
		img, err := controllerBase(p)
		if err != nil {
			return "", "", err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	ref, err := name.NewTag(r.Host+"/bases/distroless-static:nonroot", name.Insecure)
	if err != nil {
		return "", "", err
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		return "", "", err
	}
	digest, err := idx.Digest()
	if err != nil {
		return "", "", err
	}
	controller = ref.String() + "@" + digest.String()

	img, err := agentBase()
	if err != nil {
		return "", "", err
	}
	if ref, err = name.NewTag(r.Host+"/bases/hostprocess:v1.0.0", name.Insecure); err != nil {
		return "", "", err
	}
	if err := remote.Write(ref, img); err != nil {
		return "", "", err
	}
	if digest, err = img.Digest(); err != nil {
		return "", "", err
	}
	return controller, ref.String() + "@" + digest.String(), nil
}

func controllerBase(p v1.Platform) (v1.Image, error) {
	layer, err := layerOf(types.OCILayer, map[string]string{
		"etc/":          "",
		"etc/passwd":    "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
		"etc/group":     "root:x:0:\nnonroot:x:65532:\n",
		"home/":         "",
		"home/nonroot/": "",
	})
	if err != nil {
		return nil, err
	}
	return imageOf(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON), layer, v1.ConfigFile{
		OS: p.OS, Architecture: p.Architecture, Variant: p.Variant,
		Config: v1.Config{
			User: "65532", WorkingDir: "/home/nonroot",
			Env:    []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
			Labels: map[string]string{"org.opencontainers.image.description": "a stand-in for distroless static", "test.base": "controller"},
		},
	})
}

func agentBase() (v1.Image, error) {
	layer, err := layerOf(types.DockerLayer, map[string]string{"Files/": "", "Files/License.txt": "CC0 1.0 Universal\n"})
	if err != nil {
		return nil, err
	}
	return imageOf(empty.Image, layer, v1.ConfigFile{
		OS: "windows", Architecture: "amd64", OSVersion: AgentBaseOSVersion,
		Config: v1.Config{Cmd: []string{`c:\windows\system32\cmd.exe`}},
	})
}

func imageOf(base v1.Image, layer v1.Layer, cf v1.ConfigFile) (v1.Image, error) {
	cf.Created = v1.Time{Time: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
	cf.RootFS.Type = "layers"
	img, err := mutate.ConfigFile(base, &cf)
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{Created: cf.Created, CreatedBy: "stand-in base layer"}})
}

// layerOf is a layer of the given files (a name ending in "/" is a directory), in sorted order.
func layerOf(mt types.MediaType, files map[string]string) (v1.Layer, error) {
	names := slices.Sorted(maps.Keys(files))
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		h := &tar.Header{Name: n, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(files[n])), ModTime: time.Unix(0, 0)}
		if strings.HasSuffix(n, "/") {
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil }, tarball.WithMediaType(mt))
}
