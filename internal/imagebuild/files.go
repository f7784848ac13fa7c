package imagebuild

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// Files lists img's file system, its layers applied in order, sorted; directories end in "/".
// Paths are relative to the root; a Windows image's are those of its layers (Files/... for C:\).
func Files(img v1.Image) ([]string, error) {
	var out []string
	err := walk(img, func(h *tar.Header, _ io.Reader) (bool, error) {
		name := cleanPath(h.Name)
		if h.Typeflag == tar.TypeDir {
			name += "/"
		}
		out = append(out, name)
		return false, nil
	})
	sort.Strings(out)
	return out, err
}

// ReadFile returns the file at path (as Files lists it) in img's file system.
func ReadFile(img v1.Image, file string) ([]byte, error) {
	var data []byte
	found := false
	err := walk(img, func(h *tar.Header, r io.Reader) (bool, error) {
		if cleanPath(h.Name) != cleanPath(file) || h.Typeflag != tar.TypeReg {
			return false, nil
		}
		var err error
		data, err = io.ReadAll(r)
		found = true
		return true, err
	})
	if err == nil && !found {
		err = fmt.Errorf("%s: %w", file, errNoSuchFile)
	}
	return data, err
}

// LayerPath is where the builder puts img's binary in the layers of a platform's image.
func (img Image) LayerPath(p v1.Platform) string {
	if p.OS == "windows" {
		return windowsFiles + img.Binary
	}
	return strings.TrimPrefix(img.Binary, "/")
}

var errNoSuchFile = errors.New("no such file in the image")

// walk calls fn for each entry of img's flattened file system until fn says it is done.
func walk(img v1.Image, fn func(*tar.Header, io.Reader) (bool, error)) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if done, err := fn(h, tr); done || err != nil {
			return err
		}
	}
}

func cleanPath(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}
