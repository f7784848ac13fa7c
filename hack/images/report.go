package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/winproxy/winproxy/internal/imagebuild"
)

// report prints what was built: each image's index, and for each platform its digest, its base
// and the files its own layer adds.
func report(w io.Writer, built []imagebuild.Built, layout string) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, b := range built {
		fmt.Fprintf(tw, "%s\t%s\t\n", b.Image.Name, b.Digest)
		for _, bp := range b.Platforms {
			info, err := os.Stat(bp.BinaryFile)
			if err != nil {
				return err
			}
			fmt.Fprintf(tw, "  %s/%s\t%s\ton %s\n", bp.Platform.OS, bp.Platform.Architecture, bp.Digest, bp.Base)
			fmt.Fprintf(tw, "    %s\t%.1f MB\t\n", b.Image.LayerPath(bp.Platform), float64(info.Size())/1e6)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "Written to %s, an OCI image layout (one index per image, named by org.opencontainers.image.ref.name).\n", layout)
	fmt.Fprintln(w, "Push them with `make release REGISTRY=...`, or e.g. `skopeo copy --all oci:"+layout+":winproxy-agent docker://REGISTRY/winproxy-agent:TAG`.")
	return nil
}
