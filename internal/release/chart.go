package release

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"go.yaml.in/yaml/v3"
)

// chartImage is what the packaged chart says of one image: the values under <key>.image.
type chartImage struct {
	key    string // controller or agent
	repo   name.Repository
	tag    string
	digest string
}

// releaseChart copies the chart at dir into a temporary directory, fills in the release's version
// (Chart.yaml's version and appVersion) and images (values.yaml's registry, repository, tag and
// digest of both), keeping the files' comments, and packages it into outDir with helm. It returns
// the package's path.
func releaseChart(ctx context.Context, o Options, p plan, images []chartImage) (string, error) {
	tmp, err := os.MkdirTemp("", "winproxy-chart-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	chart := filepath.Join(tmp, filepath.Base(o.ChartDir))
	if err := os.CopyFS(chart, os.DirFS(o.ChartDir)); err != nil {
		return "", fmt.Errorf("copying the chart: %w", err)
	}
	if err := editYAML(filepath.Join(chart, "Chart.yaml"), map[string]string{"version": p.chartVersion, "appVersion": p.version}); err != nil {
		return "", err
	}
	values := map[string]string{}
	for _, img := range images {
		values[img.key+".image.registry"] = img.repo.RegistryStr()
		values[img.key+".image.repository"] = img.repo.RepositoryStr()
		values[img.key+".image.tag"] = img.tag
		values[img.key+".image.digest"] = img.digest
	}
	if err := editYAML(filepath.Join(chart, "values.yaml"), values); err != nil {
		return "", err
	}
	if _, err := helm(ctx, o, "package", chart, "--destination", o.OutDir); err != nil {
		return "", err
	}
	return filepath.Join(o.OutDir, p.chartPackage()), nil
}

// pushChart pushes the chart package to the OCI repository p names and returns the digest helm
// reports.
func pushChart(ctx context.Context, o Options, p plan, pkg string) (string, error) {
	args := []string{"push", pkg, "oci://" + p.chartRepo.Name()}
	if o.PlainHTTP {
		args = append(args, "--plain-http")
	}
	out, err := helm(ctx, o, args...)
	if err != nil {
		return "", err
	}
	if m := regexp.MustCompile(`(?m)^Digest: (sha256:[0-9a-f]{64})`).FindStringSubmatch(out); m != nil {
		return m[1], nil
	}
	return "", fmt.Errorf("helm push printed no digest:\n%s", out)
}

func helm(ctx context.Context, o Options, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, o.Helm, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// editYAML sets the scalar at each dotted path of set in the YAML file, which must have it
// already, and keeps everything else, comments included.
func editYAML(file string, set map[string]string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	for key, value := range set {
		node, err := lookup(&doc, key)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		node.Value, node.Tag, node.Style = value, "!!str", yaml.DoubleQuotedStyle
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	info, err := os.Stat(file)
	if err != nil {
		return err
	}
	return os.WriteFile(file, out.Bytes(), info.Mode()&fs.ModePerm)
}

// lookup finds the scalar at a dotted path of mapping keys.
func lookup(doc *yaml.Node, path string) (*yaml.Node, error) {
	node := doc
	if node.Kind == yaml.DocumentNode && len(node.Content) == 1 {
		node = node.Content[0]
	}
	for _, key := range strings.Split(path, ".") {
		var next *yaml.Node
		if node.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(node.Content); i += 2 {
				if node.Content[i].Value == key {
					next = node.Content[i+1]
				}
			}
		}
		if next == nil {
			return nil, fmt.Errorf("no %s", path)
		}
		node = next
	}
	if node.Kind != yaml.ScalarNode {
		return nil, fmt.Errorf("%s is not a single value", path)
	}
	return node, nil
}
