package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"io"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// epoch is the time of everything the builder writes (file times, the config's created, history):
// a build's bytes must not depend on when it ran.
var epoch = time.Unix(0, 0).UTC()

// windowsFiles is the directory of a Windows layer that holds what lands under C:\; Hives holds
// registry hives. The Windows snapshotter of containerd unpacks layers in this form.
const (
	windowsFiles = "Files"
	windowsHives = "Hives"
)

// binaryLayer is a layer holding one executable at dest (slash-separated from the root) with
// nothing that depends on when or where it was built: fixed time, owner root, fixed mode, entries
// in sorted order. A Windows layer has Windows' form: the file under Files/, beside an empty
// Hives/, with a security descriptor that lets any user run it.
func binaryLayer(data []byte, dest string, windows bool, mediaType types.MediaType) (v1.Layer, error) {
	name := strings.TrimPrefix(dest, "/")
	var headers []*tar.Header
	if windows {
		name = windowsFiles + "/" + name
		for _, dir := range []string{windowsFiles, windowsHives} {
			headers = append(headers, &tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o555, ModTime: epoch, Format: tar.FormatPAX})
		}
	}
	file := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: int64(len(data)), ModTime: epoch}
	if windows {
		file.Format = tar.FormatPAX
		file.PAXRecords = map[string]string{"MSWINDOWS.rawsd": usersSecurityDescriptor()}
	}
	headers = append(headers, file)
	slices.SortFunc(headers, func(a, b *tar.Header) int { return strings.Compare(a.Name, b.Name) })

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range headers {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil },
		tarball.WithMediaType(mediaType), tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithCompressedCaching)
}

// usersSecurityDescriptor is the self-relative security descriptor "O:BUG:BU" (owner and group
// BUILTIN\Users, no ACL), base64-encoded as a Windows layer's MSWINDOWS.rawsd record carries it.
// A file without one gets an ACL that only the image builder's account may use; this one lets
// the container's user, whichever it is, run the binary.
func usersSecurityDescriptor() string {
	// S-1-5-32-545: revision 1, two sub-authorities, the NT authority (5), BUILTIN (32), Users (545).
	users := []byte{1, 2, 0, 0, 0, 0, 0, 5}
	users = binary.LittleEndian.AppendUint32(users, 32)
	users = binary.LittleEndian.AppendUint32(users, 545)
	// Revision 1, control SE_SELF_RELATIVE, then the offsets of owner, group, SACL and DACL.
	const header = 20
	sd := []byte{1, 0, 0x00, 0x80}
	sd = binary.LittleEndian.AppendUint32(sd, header)
	sd = binary.LittleEndian.AppendUint32(sd, header+uint32(len(users)))
	sd = binary.LittleEndian.AppendUint32(sd, 0)
	sd = binary.LittleEndian.AppendUint32(sd, 0)
	sd = append(append(sd, users...), users...)
	return base64.StdEncoding.EncodeToString(sd)
}
