//go:build !windows

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/plan"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/migrate/migratetest"
	"github.com/winproxy/winproxy/test/conformance"
	"github.com/winproxy/winproxy/test/conformance/upstream"
)

var (
	agentOnce sync.Once
	agentBin  string
	agentErr  error
)

// agentBinary builds winproxy-agent once for the tests that run it as a user does.
func agentBinary(t *testing.T) string {
	t.Helper()
	agentOnce.Do(func() {
		dir, err := os.MkdirTemp("", "winproxy-e2e-agent-")
		if err != nil {
			agentErr = err
			return
		}
		agentBin = filepath.Join(dir, "winproxy-agent")
		cmd := exec.Command("go", "build", "-o", agentBin, "./cmd/winproxy-agent")
		cmd.Dir = env.RepoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			agentErr = fmt.Errorf("building winproxy-agent: %w\n%s", err, out)
		}
	})
	if agentErr != nil {
		t.Fatal(agentErr)
	}
	return agentBin
}

// runAgentBinary runs the built agent with extra environment; it returns standard output and
// error, and the error of the run.
func runAgentBinary(t *testing.T, extraEnv []string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(agentBinary(t), args...)
	cmd.Dir = env.RepoRoot
	cmd.Env = append(os.Environ(), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// TestMigrate runs `winproxy-agent migrate` on every case of migratetest: the printed config is
// the expected one, the API server accepts it (server-side dry-run), and `winproxy-agent plan`
// with it programs win-1's HNS as upstream winkernel does with the original kube-proxy settings.
func TestMigrate(t *testing.T) {
	driver, err := upstream.Driver(context.Background(), env.RepoRoot, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range migratetest.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"migrate", "--name", "from-kube-proxy"}
			if tc.CommandLine != "" {
				args = append(args, "--script", writeFile(t, dir, "start.ps1", tc.CommandLine))
			}
			if tc.Config != "" {
				args = append(args, "--config", writeFile(t, dir, "config.conf", tc.Config))
			}
			out, stderr, err := runAgentBinary(t, nil, args...)
			if err != nil {
				t.Fatalf("migrate: %v\n%s", err, stderr)
			}
			var wpc v1alpha1.WindowsProxyConfig
			if err := yaml.UnmarshalStrict([]byte(out), &wpc); err != nil {
				t.Fatalf("migrate printed no WindowsProxyConfig: %v\n%s", err, out)
			}
			if diff := cmp.Diff(tc.Want, wpc.Spec); diff != "" {
				t.Errorf("migrate printed another spec than the translation's (-want +got):\n%s", diff)
			}
			if n := strings.Count(stderr, "Warning: "); n != len(tc.Warnings) {
				t.Errorf("%d warnings, want %d:\n%s", n, len(tc.Warnings), stderr)
			}
			// The API server accepts it as it is.
			if out, err := dryRunApply(out); err != nil {
				t.Fatalf("the API server refused the migrated config: %v\n%s", err, out)
			}
			comparePlanWithUpstream(t, driver, tc.KubeProxy, &wpc, dir)
		})
	}
}

// dryRunApply sends a manifest to the shared API server as a server-side dry-run apply: it is
// validated (schema, CEL rules) and not stored.
func dryRunApply(manifest string) (string, error) {
	path, err := env.Kubectl()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(path, "--kubeconfig", env.Kubeconfig, "apply", "--dry-run=server", "--server-side", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// comparePlanWithUpstream programs win-1 of the world below with the migrated config through
// `winproxy-agent plan`, and with the original settings through upstream winkernel, and wants the
// same load balancers: frontend, ports, flags, source VIP and backends.
func comparePlanWithUpstream(t *testing.T, driver string, kp migratetest.KubeProxy, wpc *v1alpha1.WindowsProxyConfig, dir string) {
	t.Helper()
	w := newWorld(kp)
	f := w.planFile(wpc)
	data, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runAgentBinary(t, []string{"KUBECONFIG="}, "plan", "-f", writeFile(t, dir, "plan.yaml", string(data)), "-o", "json")
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, stderr)
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan -o json: %v\n%s", err, out)
	}
	if len(p.Problems) > 0 || !p.Status.Programmable {
		t.Fatalf("plan: not programmable, or problems %+v", p.Problems)
	}
	up, err := runUpstream(driver, w.upstreamCluster(p.Status.SourceVIP.Address))
	if err != nil {
		t.Fatal(err)
	}
	got, want := canonPlan(p), canonUpstream(up)
	if !slices.Equal(got, want) {
		t.Errorf("load balancers differ from upstream winkernel's with the original flags\nwinproxy plan:\n  %s\nupstream:\n  %s",
			strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if len(got) == 0 {
		t.Error("no load balancer programmed: the comparison compares nothing")
	}
}

func runUpstream(driver string, c *conformance.Cluster) (*conformance.StepResult, error) {
	in, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(driver)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("upstream driver: %w\n%s", err, stderr.String())
	}
	var r conformance.Result
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("upstream driver's answer: %w\n%s", err, stdout.String())
	}
	if len(r.Steps) != 1 || r.Steps[0].Error != "" {
		return nil, fmt.Errorf("upstream: %+v", r.Steps)
	}
	return &r.Steps[0], nil
}

// canonLB is a load balancer as both sides can say it.
func canonLB(vip, proto string, ext, internal uint16, flags, portFlags uint32, sourceVIP string, backends []string) string {
	slices.Sort(backends)
	return fmt.Sprintf("%s %s:%d->%d flags=%d portFlags=%d sourceVIP=%s backends=%s", proto, vip, ext, internal, flags, portFlags, sourceVIP, strings.Join(backends, ","))
}

func canonPlan(p plan.Plan) []string {
	var out []string
	for _, lb := range p.LoadBalancers {
		var be []string
		for _, b := range lb.Backends {
			be = append(be, canonAddr(b.IP))
		}
		out = append(out, canonLB(canonAddr(lb.VIP), lb.Protocol, lb.ExternalPort, lb.InternalPort, lb.Flags, lb.PortMappingFlags, canonAddr(lb.SourceVIP), be))
	}
	slices.Sort(out)
	return out
}

// canonUpstream says upstream's load balancers as canonLB does; a backend endpoint of both
// families is named by its address in the load balancer's family (flag 2 is IPv6).
func canonUpstream(r *conformance.StepResult) []string {
	ips := map[string][]string{}
	for _, ep := range r.Endpoints {
		ips[ep.ID] = ep.IPs
	}
	var out []string
	for _, lb := range r.LoadBalancers {
		var be []string
		for _, id := range lb.Endpoints {
			for _, ip := range ips[id] {
				if a, err := netip.ParseAddr(ip); err == nil && a.Is6() == (lb.Flags&2 != 0) {
					be = append(be, a.String())
				}
			}
		}
		vip := ""
		if len(lb.VIPs) > 0 {
			vip = canonAddr(lb.VIPs[0])
		}
		out = append(out, canonLB(vip, hns.ProtocolName(lb.Protocol), lb.ExternalPort, lb.InternalPort, lb.Flags, lb.PortFlags, canonAddr(lb.SourceVIP), be))
	}
	slices.Sort(out)
	return out
}

func canonAddr(s string) string {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.String()
	}
	return s
}

// world is win-1 and its neighbour win-2 with one NodePort Service, whose pods run on both: a
// local backend and a remote one, in each family the node proxies.
type world struct {
	kp       migratetest.KubeProxy
	families []string
}

const (
	worldHostMAC = "00-15-5D-01-02-03"
	calicoEPMAC  = "00-15-5D-01-02-04"
	// rootEndpointIP is the host's cbr0 endpoint, which health-check load balancers forward to.
	rootEndpointIP = "10.244.1.1"
)

func newWorld(kp migratetest.KubeProxy) world {
	w := world{kp: kp, families: []string{"IPv4"}}
	if kp.DualStack {
		w.families = append(w.families, "IPv6")
	}
	return w
}

// addr is one of the world's addresses in a family: node IPs, pod IPs, the ClusterIP.
func (w world) addr(kind, family string) string {
	v4 := map[string]string{"win-1": "10.0.0.11", "win-2": "10.0.0.12", "pod-1": "10.244.1.10", "pod-2": "10.244.2.20", "cluster": "10.96.10.10"}
	v6 := map[string]string{"win-1": "fd00::11", "win-2": "fd00::12", "pod-1": "fd00:10:244:1::10", "pod-2": "fd00:10:244:2::20", "cluster": "fd00:96::10"}
	if family == "IPv6" {
		return v6[kind]
	}
	return v4[kind]
}

func (w world) each(kind string) []string {
	var out []string
	for _, f := range w.families {
		out = append(out, w.addr(kind, f))
	}
	return out
}

func (w world) node(name, podCIDR string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/os": "windows", "winproxy.io/managed": "true"}}}
	n.Spec.PodCIDR, n.Spec.PodCIDRs = podCIDR, []string{podCIDR}
	for _, ip := range w.each(name) {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	n.Status.NodeInfo.KubeletVersion = "v1.33.2"
	if name == "win-1" && w.kp.AnnotateSourceVIP {
		n.Annotations = map[string]string{v1alpha1.SourceVIPAnnotation: migratetest.SourceVIP}
	}
	return n
}

func (w world) objects() ([]corev1.Service, []discoveryv1.EndpointSlice) {
	svc := corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	svc.Spec.Type = corev1.ServiceTypeNodePort
	svc.Spec.ClusterIPs = w.each("cluster")
	svc.Spec.ClusterIP = svc.Spec.ClusterIPs[0]
	for _, f := range w.families {
		svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, corev1.IPFamily(f))
	}
	svc.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, NodePort: 30080}}
	var slices []discoveryv1.EndpointSlice
	for _, f := range w.families {
		ready, port, name := true, int32(8080), "http"
		s := discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "shop", Name: "web-" + strings.ToLower(f), Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressType(f),
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: ptr(corev1.ProtocolTCP)}},
		}
		for pod, node := range map[string]string{"pod-1": "win-1", "pod-2": "win-2"} {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{w.addr(pod, f)}, NodeName: ptr(node), Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
		}
		slices = append(slices, s)
	}
	return []corev1.Service{svc}, slices
}

func (w world) networkType() string {
	if w.kp.Overlay {
		return "Overlay"
	}
	return "L2Bridge"
}

// planFile is win-1 with the migrated config, as `winproxy-agent plan -f` reads it.
func (w world) planFile(wpc *v1alpha1.WindowsProxyConfig) *plan.File {
	services, slices := w.objects()
	f := &plan.File{
		Node: "win-1", WindowsProxyConfig: wpc,
		Nodes:    []corev1.Node{w.node("win-1", "10.244.1.0/24"), w.node("win-2", "10.244.2.0/24")},
		Services: services, EndpointSlices: slices,
		HNS: plan.Host{WindowsServer: "2022", HostMAC: worldHostMAC, Network: &plan.HostNetwork{Name: w.kp.Network, ID: "NETWORK-1", Type: w.networkType()}},
	}
	f.HNS.Endpoints = []plan.HostEndpoint{{ID: "EP-POD-1", Name: "web-pod-1", IPs: w.each("pod-1")}}
	if w.kp.ForwardHealthCheckVIP {
		f.HNS.Endpoints = append(f.HNS.Endpoints, plan.HostEndpoint{ID: "EP-ROOT", Name: v1alpha1.DefaultRootEndpointName, IPs: []string{rootEndpointIP}})
	}
	if w.kp.SourceVIPEndpoint != "" {
		f.HNS.Endpoints = append(f.HNS.Endpoints, plan.HostEndpoint{ID: "EP-CALICO", Name: w.kp.SourceVIPEndpoint, IPs: []string{w.kp.SourceVIP}})
	}
	if w.kp.Overlay {
		f.HNS.Network.RemoteSubnets = []plan.RemoteSubnet{{DestinationPrefix: "10.244.2.0/24", ProviderAddress: "10.0.0.12"}}
	}
	return f
}

// upstreamCluster is the same node as upstream winkernel runs it with the original settings; a
// source VIP kube-proxy reserved on the node is the one winproxy resolved.
func (w world) upstreamCluster(resolvedSourceVIP string) *conformance.Cluster {
	services, slices := w.objects()
	caps := hns.CapabilitiesFor(hns.WindowsServer2022.HNS)
	c := &conformance.Cluster{
		Name: "migrate", NodeName: "win-1", NodeIPs: map[string]string{}, Families: w.families,
		Network:    conformance.Network{ID: "NETWORK-1", Name: w.kp.Network, Type: w.networkType()},
		HNSVersion: hns.WindowsServer2022.HNS.String(),
		Features:   conformance.Features{DSR: caps.DSR, SessionAffinity: caps.SessionAffinity, IPv6DualStack: caps.IPv6DualStack, Modify: caps.ModifyLoadBalancer},
		HostMAC:    worldHostMAC, EnableDSR: w.kp.DSR, RootEndpointName: v1alpha1.DefaultRootEndpointName, HealthzPort: v1alpha1.DefaultHealthCheckPort,
		ForwardHealthCheckVIP: w.kp.ForwardHealthCheckVIP,
		Endpoints:             []conformance.LocalEndpoint{{Name: "web-pod-1", IPs: w.each("pod-1"), MAC: "00-15-5D-00-00-10"}},
		Steps:                 []conformance.Step{{}},
	}
	if w.kp.ForwardHealthCheckVIP {
		c.Endpoints = append(c.Endpoints, conformance.LocalEndpoint{Name: v1alpha1.DefaultRootEndpointName, IPs: []string{rootEndpointIP}, MAC: "00-15-5D-00-00-02"})
	}
	for _, f := range w.families {
		c.NodeIPs[f] = w.addr("win-1", f)
	}
	if w.kp.Overlay {
		c.Network.Routes = []conformance.Route{{Prefix: "10.244.2.0/24", ProviderAddress: "10.0.0.12", IsolationID: 4096}}
		c.SourceVIP = w.kp.SourceVIP
		if c.SourceVIP == "" {
			c.SourceVIP = resolvedSourceVIP
		}
	}
	if w.kp.SourceVIPEndpoint != "" {
		c.SourceVIPEndpoint = w.kp.SourceVIPEndpoint
		c.Endpoints = append(c.Endpoints, conformance.LocalEndpoint{Name: w.kp.SourceVIPEndpoint, IPs: []string{w.kp.SourceVIP}, MAC: calicoEPMAC})
	}
	for i := range services {
		c.Steps[0].Services = append(c.Steps[0].Services, &services[i])
	}
	for i := range slices {
		c.Steps[0].Slices = append(c.Steps[0].Slices, &slices[i])
	}
	return c
}

// TestMigrateFromCluster reads a kube-proxy DaemonSet and the ConfigMap it mounts (a kubeadm
// KubeProxyConfiguration and a start script) from the cluster.
func TestMigrateFromCluster(t *testing.T) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-proxy-windows-migrate"}, Data: map[string]string{
		"config.conf": "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nclusterCIDR: 10.244.0.0/16,fd00:10:244::/56\nmode: kernelspace\n" +
			"featureGates:\n  WinDSR: true\nwinkernel:\n  enableDSR: true\n  networkName: cbr0\n",
		"run.ps1": "$env:KUBE_NETWORK = \"cbr0\"\n& kube-proxy.exe --config=/var/lib/kube-proxy/config.conf --hostname-override=$env:NODE_NAME --nodeport-addresses=primary\n",
	}}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-proxy-windows-migrate"}}
	labels := map[string]string{"k8s-app": "kube-proxy-windows-migrate"}
	ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	ds.Spec.Template.Labels = labels
	ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "kube-proxy", Image: "sigwindowstools/kube-proxy:v1.33.2-calico-hostprocess",
		Args: []string{"$env:CONTAINER_SANDBOX_MOUNT_POINT/var/lib/kube-proxy/run.ps1"}, Env: []corev1.EnvVar{{Name: "KUBE_NETWORK", Value: "ignored-by-the-script"}}}}
	ds.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "kube-proxy", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, cm) })
	if err := env.Client.Create(ctx, ds); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, ds) })

	out, stderr, err := runAgentBinary(t, []string{"KUBECONFIG=" + env.Kubeconfig}, "migrate", "--daemonset", "kube-system/kube-proxy-windows-migrate")
	if err != nil {
		t.Fatalf("migrate --daemonset: %v\n%s", err, stderr)
	}
	var wpc v1alpha1.WindowsProxyConfig
	if err := yaml.UnmarshalStrict([]byte(out), &wpc); err != nil {
		t.Fatal(err)
	}
	if wpc.Name != "kube-proxy-windows-migrate" || wpc.Spec.Network.Name != "cbr0" || !wpc.Spec.DSR.Enabled || !wpc.Spec.DualStack.Enabled || !wpc.Spec.FeatureGates["WinDSR"] {
		t.Errorf("migrated from the cluster:\n%s", out)
	}
	if !strings.Contains(stderr, "--nodeport-addresses=primary") || strings.Count(stderr, "Warning: ") != 1 {
		t.Errorf("warnings: want one, for --nodeport-addresses:\n%s", stderr)
	}
	if out, err := dryRunApply(out); err != nil {
		t.Errorf("the API server refused it: %v\n%s", err, out)
	}

	_, stderr, err = runAgentBinary(t, []string{"KUBECONFIG=" + env.Kubeconfig}, "migrate", "--daemonset", "kube-system/no-such-daemonset")
	if err == nil || !strings.Contains(stderr, "no-such-daemonset") || !strings.Contains(stderr, "not found") {
		t.Errorf("a missing DaemonSet: %v\n%s", err, stderr)
	}
}
