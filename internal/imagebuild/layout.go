package imagebuild

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// refNameAnnotation names an index in an OCI image layout (`skopeo copy oci:DIR:NAME ...`).
const refNameAnnotation = "org.opencontainers.image.ref.name"

// WriteLayout writes the built images into an OCI image layout at dir, each index named by its
// image's name. A layout already at dir is replaced; anything else there is refused, not deleted.
func WriteLayout(dir string, built []Built) error {
	if err := removeLayout(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	for _, b := range built {
		if err := p.AppendIndex(b.Index, layout.WithAnnotations(map[string]string{refNameAnnotation: b.Image.Name})); err != nil {
			return fmt.Errorf("writing %s into %s: %w", b.Image.Name, dir, err)
		}
	}
	return nil
}

func removeLayout(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return fmt.Errorf("%s %w", dir, errNotLayout)
	}
	return os.RemoveAll(dir)
}
