//go:build !windows

package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/internal/imagebuild"
)

// chartVersion is the chart version a release of version gets.
var chartVersion = strings.TrimPrefix(version, "v")

// TestRelease runs `make release` against the registry in the test process: first with DRY_RUN=1,
// which must push nothing, then for real; then installs the pushed chart from the registry into
// the test apiserver, as a user would.
func TestRelease(t *testing.T) {
	registry := reg.Host + "/winproxy"
	dist := filepath.Join(work, "dist")
	vars := []string{"REGISTRY=" + registry, "RELEASE_DIR=" + dist, "PLAIN_HTTP=1"}

	plan := makeTarget(t, "release", append(vars, "DRY_RUN=1")...)
	for _, want := range []string{
		registry + "/winproxy-controller:" + version, "linux/amd64, linux/arm64",
		registry + "/winproxy-agent:" + version, "windows/amd64",
		"oci://" + registry + "/charts/winproxy:" + chartVersion, "DRY_RUN: stopping here",
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("the dry run's plan lacks %q:\n%s", want, plan)
		}
	}
	if repos := catalog(t); len(repos) != 2 {
		t.Errorf("after a dry run the registry holds %v, want the two bases only", repos)
	}
	if _, err := os.Stat(dist); !os.IsNotExist(err) {
		t.Errorf("a dry run wrote %s (%v)", dist, err)
	}

	out := makeTarget(t, "release", vars...)
	digests := pushedDigests(t, registry)
	for name, b := range firstBuild(t) {
		if digests[name] != b.digest.String() {
			t.Errorf("%s: pushed %s, but make images built %s from the same commit", name, digests[name], b.digest)
		}
	}
	checkReleaseFiles(t, dist, registry, digests)
	installFromRegistry(t, registry, digests)
	if t.Failed() {
		t.Logf("make release:\n%s", out)
	}

	// A second release into the same directory is refused before anything is pushed.
	if _, err := makeOutput("release", vars...); err == nil || !strings.Contains(err.Error(), "already holds files") {
		t.Errorf("a second release into %s: %v, want a refusal", dist, err)
	}
}

func catalog(t *testing.T) []string {
	t.Helper()
	repos, err := reg.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	return repos
}

// pushedDigests are the digests the registry serves for both images' release tags.
func pushedDigests(t *testing.T, registry string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, img := range []string{"winproxy-controller", "winproxy-agent"} {
		ref, err := name.NewTag(registry+"/"+img+":"+version, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		desc, err := remote.Head(ref)
		if err != nil {
			t.Fatalf("%s was not pushed: %v", ref, err)
		}
		out[img] = desc.Digest.String()
	}
	return out
}

// checkReleaseFiles checks what the release wrote: SHA256SUMS of every other file, images.txt
// naming the pushed digests, and an SBOM of each platform image listing its Go modules.
func checkReleaseFiles(t *testing.T, dist, registry string, digests map[string]string) {
	t.Helper()
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, file, _ := strings.Cut(line, "  ")
		data, err := os.ReadFile(filepath.Join(dist, file))
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != sum {
			t.Errorf("SHA256SUMS says %s of %s, the file has %x", sum, file, got)
		}
		listed = append(listed, file)
	}
	want := []string{"images.txt", "winproxy-" + chartVersion + ".tgz", "winproxy-agent-windows-amd64.cdx.json",
		"winproxy-controller-linux-amd64.cdx.json", "winproxy-controller-linux-arm64.cdx.json"}
	sort.Strings(want)
	if strings.Join(listed, " ") != strings.Join(want, " ") {
		t.Errorf("SHA256SUMS lists %v, want %v", listed, want)
	}
	images, _ := os.ReadFile(filepath.Join(dist, "images.txt"))
	for img, digest := range digests {
		if line := registry + "/" + img + ":" + version + "@" + digest; !strings.Contains(string(images), line) {
			t.Errorf("images.txt lacks %s:\n%s", line, images)
		}
	}
	for _, file := range want {
		if strings.HasSuffix(file, ".cdx.json") {
			checkSBOM(t, filepath.Join(dist, file))
		}
	}
}

func checkSBOM(t *testing.T, file string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatalf("%s is not a CycloneDX JSON BOM: %v", file, err)
	}
	if bom.Metadata == nil || bom.Metadata.Component == nil || bom.Metadata.Component.Type != cdx.ComponentTypeContainer {
		t.Fatalf("%s: no container image as the BOM's subject", file)
	}
	names := map[string]string{}
	for _, c := range *bom.Components {
		names[c.Name] = c.Version
	}
	for _, mod := range []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime", "std"} {
		if names[mod] == "" {
			t.Errorf("%s: no %s among the components", filepath.Base(file), mod)
		}
	}
}

// installFromRegistry installs the released chart from the registry, as the release notes say,
// and checks that the controller and agent run the pushed images, by digest.
func installFromRegistry(t *testing.T, registry string, digests map[string]string) {
	t.Helper()
	const ns = "winproxy-released"
	helmCmd(t, "install", "winproxy", "oci://"+registry+"/charts/winproxy", "--version", chartVersion, "--plain-http",
		"--namespace", ns, "--create-namespace", "--kubeconfig", env.Kubeconfig,
		// The test control plane has the CRDs already, and no address for the agents to find.
		"--set", "crds.enabled=false", "--set", "apiServer.host=api.winproxy.test", "--set", "apiServer.port=6443")
	ctx := context.Background()
	var deploy appsv1.Deployment
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "winproxy-controller"}, &deploy); err != nil {
		t.Fatal(err)
	}
	if got, want := deploy.Spec.Template.Spec.Containers[0].Image, registry+"/winproxy-controller@"+digests["winproxy-controller"]; got != want {
		t.Errorf("the controller runs %s, want %s", got, want)
	}
	var ds appsv1.DaemonSet
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "winproxy-agent"}, &ds); err != nil {
		t.Fatal(err)
	}
	agent := ds.Spec.Template.Spec.Containers[0]
	if got, want := agent.Image, registry+"/winproxy-agent@"+digests["winproxy-agent"]; got != want {
		t.Errorf("the agents run %s, want %s", got, want)
	}
	if len(agent.Command) != 1 || agent.Command[0] != imagebuild.AgentCommand {
		t.Errorf("the agents' command %q is not the image's entrypoint %q", agent.Command, imagebuild.AgentCommand)
	}
	if chart := deploy.Labels["helm.sh/chart"]; chart != "winproxy-"+chartVersion {
		t.Errorf("installed chart %q, want winproxy-%s", chart, chartVersion)
	}
}

// helmCmd runs helm with the test's private configuration.
func helmCmd(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	cmd.Env = append(os.Environ(), helmEnv()...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// helmBinary is $HELM (which the Makefile exports), else the newest bin/helm-v* of the repository.
func helmBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HELM"); p != "" {
		return p
	}
	found, _ := filepath.Glob(filepath.Join(env.RepoRoot, "bin", "helm-v*"))
	if len(found) == 0 {
		t.Fatal("no helm: set HELM or run 'make helm' to build it into bin/")
	}
	sort.Strings(found)
	return found[len(found)-1]
}
