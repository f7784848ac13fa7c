package migrate_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/migrate"
	"github.com/winproxy/winproxy/internal/migrate/migratetest"
)

// kubeadmConfig is the KubeProxyConfiguration kubeadm writes into the kube-proxy ConfigMap,
// every field present and most at their zero value.
const kubeadmConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
bindAddress: 0.0.0.0
clientConnection:
  acceptContentTypes: ""
  burst: 0
  contentType: ""
  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
  qps: 0
clusterCIDR: 10.244.0.0/16
configSyncPeriod: 0s
conntrack:
  maxPerCore: null
  min: null
  tcpBeLiberal: false
  tcpCloseWaitTimeout: null
  tcpEstablishedTimeout: null
  udpStreamTimeout: 0s
  udpTimeout: 0s
detectLocal:
  bridgeInterface: ""
  interfaceNamePrefix: ""
detectLocalMode: ""
enableProfiling: false
healthzBindAddress: ""
hostnameOverride: ""
iptables:
  localhostNodePorts: null
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
ipvs:
  excludeCIDRs: null
  minSyncPeriod: 0s
  scheduler: ""
  strictARP: false
  syncPeriod: 0s
  tcpFinTimeout: 0s
  tcpTimeout: 0s
  udpTimeout: 0s
kind: KubeProxyConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
metricsBindAddress: ""
mode: ""
nftables:
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
nodePortAddresses: null
oomScoreAdj: null
portRange: ""
showHiddenMetricsForVersion: ""
winkernel:
  enableDSR: false
  forwardHealthCheckVip: false
  networkName: ""
  rootHnsEndpointName: ""
  sourceVip: ""
`

func managed() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{migrate.ManagedLabel: "true"}}
}

// The cases of migratetest, shared with the end-to-end test that checks the configs against the
// API server and upstream winkernel.
func TestTranslate(t *testing.T) {
	for _, tc := range migratetest.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			res, err := tc.Translate()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.Want, res.Config.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			checkWarnings(t, res.Warnings, tc.Warnings)
		})
	}
}

// checkWarnings wants one warning containing each of want, and no other.
func checkWarnings(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d warnings, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.Contains(g, w)
		}
		if !found {
			t.Errorf("no warning says %q:\n%s", w, strings.Join(got, "\n"))
		}
	}
}

func TestTranslateErrors(t *testing.T) {
	in := migrate.NewInput()
	in.AddCommandLine("kube-proxy.exe --enable-dsr=true", "test")
	if _, err := migrate.Translate(in, "x"); err == nil || !strings.Contains(err.Error(), "KUBE_NETWORK") {
		t.Errorf("no network: %v", err)
	}
	in = migrate.NewInput()
	in.AddCommandLine("kube-proxy.exe --network-name=$net", "test")
	if _, err := migrate.Translate(in, "x"); err == nil || !strings.Contains(err.Error(), "computed on the node") {
		t.Errorf("a network computed on the node: %v", err)
	}
	for _, data := range []string{"apiVersion: v1\nkind: ConfigMap\n", "kind: KubeProxyConfiguration\n", ": not yaml"} {
		if err := migrate.NewInput().AddConfig([]byte(data), "f"); err == nil {
			t.Errorf("%q accepted as a KubeProxyConfiguration", data)
		}
	}
}

// TestDaemonSetManifest reads the sig-windows-tools Flannel DaemonSet: the network comes from its
// $KUBE_NETWORK, and the flags of the image's start script are reported as not visible.
func TestDaemonSetManifest(t *testing.T) {
	f, err := os.Open("testdata/sig-windows-tools-flannel-kube-proxy.yml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := migrate.ReadManifests(f)
	if err != nil || len(m.DaemonSets) != 1 {
		t.Fatalf("%d DaemonSets, %v", len(m.DaemonSets), err)
	}
	in := migrate.NewInput()
	if err := in.AddDaemonSet(context.Background(), m.DaemonSets[0], m.ConfigMap); err != nil {
		t.Fatal(err)
	}
	res, err := migrate.Translate(in, "flannel")
	if err != nil {
		t.Fatal(err)
	}
	if res.Config.Spec.Network.Name != "flannel.4096" || res.Config.Spec.Overlay != nil {
		t.Errorf("spec = %+v", res.Config.Spec)
	}
	checkWarnings(t, res.Warnings, []string{"mounts ConfigMap kube-proxy, which was not found", "runs its image's entrypoint"})

	// With the ConfigMap kubeadm writes and the start script's flags: what the node really runs.
	m.ConfigMaps = append(m.ConfigMaps, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"},
		Data: map[string]string{"config.conf": kubeadmConfig, "kubeconfig.conf": "apiVersion: v1\nkind: Config\n"}})
	in = migrate.NewInput()
	if err := in.AddDaemonSet(context.Background(), m.DaemonSets[0], m.ConfigMap); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("testdata/sig-windows-tools-flannel-start-flags.ps1")
	if err != nil {
		t.Fatal(err)
	}
	in.AddCommandLine(string(script), "start.ps1")
	if res, err = migrate.Translate(in, "flannel"); err != nil {
		t.Fatal(err)
	}
	want := v1alpha1.WindowsProxyConfigSpec{
		NodeSelector: managed(),
		Network:      v1alpha1.NetworkSpec{Name: "flannel.4096", Type: v1alpha1.NetworkTypeAuto},
		Overlay:      &v1alpha1.OverlaySpec{SourceVIP: v1alpha1.SourceVIPSpec{Strategy: v1alpha1.SourceVIPStrategyCreate}},
		FeatureGates: map[string]bool{"WinOverlay": true},
	}
	if diff := cmp.Diff(want, res.Config.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	// The script gave the flags the image's entrypoint passes: no warning that they are hidden.
	checkWarnings(t, res.Warnings, []string{"--v=6", "host-local IPAM"})
}

func TestUnknownAgentFlagError(t *testing.T) {
	for flag, want := range map[string]string{
		"--enable-dsr":         "set spec.dsr.enabled there",
		"network-name":         "set spec.network.name there",
		"--nodeport-addresses": "without an equivalent in winproxy",
		"--proxy-mode":         "does not need",
	} {
		if err := migrate.UnknownAgentFlagError(flag); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", flag, err, want)
		}
	}
	for _, flag := range []string{"--v", "--kube-api-qps", "--no-such-flag"} {
		if err := migrate.UnknownAgentFlagError(flag); err != nil {
			t.Errorf("%s: %v, want nil (the agent's own flag, or not kube-proxy's)", flag, err)
		}
	}
}

// Every setting is named once, and every translated one names a spec field.
func TestSettingsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range migrate.Settings {
		if seen[s.Name()] {
			t.Errorf("%s listed twice", s.Name())
		}
		seen[s.Name()] = true
		if s.Kind == migrate.Field && !strings.HasPrefix(s.Target, "spec.") {
			t.Errorf("%s: target %q is not a WindowsProxyConfig field", s.Name(), s.Target)
		}
		if s.Kind == migrate.Unsupported && s.Note == "" {
			t.Errorf("%s has no equivalent but no note saying why", s.Name())
		}
	}
}

// kubeProxyFlag is a flag registration in kube-proxy's options: fs.XxxVar(&..., "name", ...).
var kubeProxyFlag = regexp.MustCompile(`fs\.[A-Za-z0-9]+\([^"]*?"([a-z0-9-]+)"`)

// Every flag of the kube-proxy the project pins (hack/tools/winkernel, the one the conformance
// suite builds) is in the table, so that migrate and run know each one.
func TestSettingsCoverKubeProxy(t *testing.T) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes")
	cmd.Dir = "../../hack/tools/winkernel"
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("finding the pinned k8s.io/kubernetes (go list in hack/tools/winkernel): %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "cmd", "kube-proxy", "app")
	var flags []string
	for _, f := range []string{"options.go", "init_windows.go"} {
		src, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range kubeProxyFlag.FindAllStringSubmatch(string(src), -1) {
			flags = append(flags, m[1])
		}
	}
	if len(flags) < 40 {
		t.Fatalf("found %d kube-proxy flags in %s: the pattern no longer matches upstream's source", len(flags), dir)
	}
	for _, f := range flags {
		if _, ok := migrate.ByFlag(f); !ok {
			t.Errorf("kube-proxy flag --%s is not in migrate.Settings", f)
		}
	}
}
