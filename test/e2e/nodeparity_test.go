//go:build !windows

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/winproxy/winproxy/agent/healthcheck"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/fleet"
	"github.com/winproxy/winproxy/internal/testenv"
)

// probe is one answer of a health server, as a cloud load balancer sees it.
type probe struct {
	code   int
	weight string
	body   map[string]any
	err    error
}

func get(url string) probe {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return probe{err: err}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	p := probe{code: resp.StatusCode, weight: resp.Header.Get("X-Load-Balancing-Endpoint-Weight")}
	if err := json.Unmarshal(data, &p.body); err != nil {
		p.err = fmt.Errorf("body %q is not JSON: %w", data, err)
	}
	return p
}

func (p probe) String() string {
	if p.err != nil {
		return p.err.Error()
	}
	return fmt.Sprintf("%d weight=%q %v", p.code, p.weight, p.body)
}

// proxyHealth probes a node's proxy health server (port 10256, the config's default).
func (s *system) proxyHealth(node, path string) probe {
	return get(fmt.Sprintf("http://%s/%s", net.JoinHostPort(s.agents[node].HealthIP, "10256"), path))
}

// serviceHealth probes a node's service health server for a healthCheckNodePort.
func (s *system) serviceHealth(node string, port int32) probe {
	return get(fmt.Sprintf("http://%s/", net.JoinHostPort(s.agents[node].HealthIP, strconv.Itoa(int(port)))))
}

// healthChecks is issue #10's end-to-end check: every node answers load balancers as kube-proxy
// would, on an address of its own.
func (s *system) healthChecks(t *testing.T) {
	ctx := context.Background()
	for _, n := range windowsNodes() {
		for _, path := range []string{"healthz", "livez"} {
			testenv.Eventually(t, 30*time.Second, func() error {
				p := s.proxyHealth(n.Name, path)
				if p.err != nil || p.code != 200 || p.body["lastUpdated"] == nil || p.body["currentTime"] == nil {
					return fmt.Errorf("%s /%s = %v, want 200 with lastUpdated and currentTime", n.Name, path, p)
				}
				if path == "healthz" && p.body["nodeEligible"] != true {
					return fmt.Errorf("%s /healthz nodeEligible = %v, want true", n.Name, p.body["nodeEligible"])
				}
				return nil
			})
		}
		t.Logf("%s /healthz: %v", n.Name, s.proxyHealth(n.Name, "healthz"))
	}

	// An externalTrafficPolicy: Local LoadBalancer whose pods all run on win-2022.
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: fleet.Namespace, Name: "checkout"},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeLoadBalancer,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Ports:                 []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if err := env.Client.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	port := svc.Spec.HealthCheckNodePort
	if port == 0 {
		t.Fatal("the apiserver allocated no healthCheckNodePort")
	}
	pods := []fleet.Pod{{Node: "win-2022", IP: "10.244.2.30"}, {Node: "win-2022", IP: "10.244.2.31"}, {Node: "linux-1", IP: "10.244.0.30"}}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: fleet.Namespace, Name: "checkout-1", Labels: map[string]string{discoveryv1.LabelServiceName: "checkout"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Protocol: ptr(corev1.ProtocolTCP), Port: ptr(int32(8080))}},
	}
	for _, p := range pods {
		slice.Endpoints = append(slice.Endpoints, fleet.Endpoint(p))
	}
	if err := env.Client.Create(ctx, slice); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		code  int
		local float64
	}{"win-2019": {503, 0}, "win-2022": {200, 2}, "win-2025": {503, 0}}
	for node, w := range want {
		testenv.Eventually(t, 30*time.Second, func() error {
			p := s.serviceHealth(node, port)
			if p.err != nil || p.code != w.code || p.body["localEndpoints"] != w.local || p.weight != strconv.Itoa(int(w.local)) {
				return fmt.Errorf("%s health check port %d = %v, want %d with localEndpoints %v", node, port, p, w.code, w.local)
			}
			return nil
		})
		t.Logf("%s service health (port %d): %v", node, port, s.serviceHealth(node, port))
	}

	// The pods on win-2022 go away: it fails its checks and is drained.
	slice.Endpoints = slice.Endpoints[2:]
	if err := env.Client.Update(ctx, slice); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		if p := s.serviceHealth("win-2022", port); p.code != 503 || p.body["localEndpoints"] != float64(0) {
			return fmt.Errorf("win-2022 after its pods left: %v, want 503 with localEndpoints 0", p)
		}
		return nil
	})

	// The Service is deleted: its health check port closes everywhere.
	if err := env.Client.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	_ = env.Client.Delete(ctx, slice)
	for _, n := range windowsNodes() {
		testenv.Eventually(t, 30*time.Second, func() error {
			if p := s.serviceHealth(n.Name, port); p.err == nil {
				return fmt.Errorf("%s still answers on port %d after the Service was deleted: %v", n.Name, port, p)
			}
			return nil
		})
	}

	// The cluster autoscaler is about to remove win-2025: /healthz drains it, /livez keeps it alive.
	taint(t, "win-2025", true)
	testenv.Eventually(t, 10*time.Second, func() error {
		hz, lz := s.proxyHealth("win-2025", "healthz"), s.proxyHealth("win-2025", "livez")
		if hz.code != 503 || hz.body["nodeEligible"] != false || lz.code != 200 {
			return fmt.Errorf("tainted win-2025: /healthz %v, /livez %v; want 503 (not eligible) and 200", hz, lz)
		}
		return nil
	})
	taint(t, "win-2025", false)
	testenv.Eventually(t, 10*time.Second, func() error {
		if hz := s.proxyHealth("win-2025", "healthz"); hz.code != 200 {
			return fmt.Errorf("win-2025 /healthz after the taint was removed: %v", hz)
		}
		return nil
	})
}

// taint adds or removes the cluster autoscaler's ToBeDeletedByClusterAutoscaler taint.
func taint(t *testing.T, node string, on bool) {
	t.Helper()
	n := &corev1.Node{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	var kept []corev1.Taint
	for _, tt := range n.Spec.Taints {
		if tt.Key != healthcheck.ToBeDeletedTaint {
			kept = append(kept, tt)
		}
	}
	if on {
		kept = append(kept, corev1.Taint{Key: healthcheck.ToBeDeletedTaint, Value: strconv.FormatInt(time.Now().Unix(), 10), Effect: corev1.TaintEffectNoSchedule})
	}
	n.Spec.Taints = kept
	if err := env.Client.Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

// killedHealthServers: a killed agent's ports stop answering; the restarted agent answers again
// and writes nothing to HNS.
func (s *system) killedHealthServers(t *testing.T) {
	agent := s.agents["win-2019"]
	agent.Kill()
	if p := s.proxyHealth("win-2019", "healthz"); p.err == nil {
		t.Errorf("the killed agent's health server still answers: %v", p)
	}
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		if p := s.proxyHealth("win-2019", "healthz"); p.code != 200 {
			return fmt.Errorf("the restarted agent's /healthz: %v", p)
		}
		if p := s.serviceHealth("win-2019", 32000); p.code != 200 || p.body["localEndpoints"] != float64(1) {
			return fmt.Errorf("the restarted agent's storefront health check: %v", p)
		}
		return nil
	})
	if w := s.writes(t, "win-2019"); w != 0 {
		t.Errorf("the restarted agent made %v HNS writes, want 0", w)
	}
}

// serviceSelection: a Service labelled for another proxy gets no load balancer, as kube-proxy
// skips it; an unlabelled one created at the same time shows the agents have seen both.
func (s *system) serviceSelection(t *testing.T) {
	ctx := context.Background()
	before := desiredLBs(t)
	created := append(createService(t, "mesh", "10.0.0.110", map[string]string{"service.kubernetes.io/service-proxy-name": "mesh-proxy"}),
		createService(t, "control", "10.0.0.111", nil)...)
	for _, n := range windowsNodes() {
		testenv.Eventually(t, 30*time.Second, func() error {
			if !strings.Contains(s.table(t, n.Name), "10.0.0.111") {
				return fmt.Errorf("%s has not programmed the control service yet", n.Name)
			}
			return nil
		})
		if table := s.table(t, n.Name); strings.Contains(table, "10.0.0.110") {
			t.Errorf("%s programmed a Service labelled for another proxy:\n%s", n.Name, table)
		}
	}
	// Leave the hosts as they were, so later steps start from a settled fleet.
	for _, obj := range created {
		if err := env.Client.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range windowsNodes() {
		testenv.Eventually(t, 30*time.Second, func() error {
			if strings.Contains(s.table(t, n.Name), "10.0.0.111") {
				return fmt.Errorf("%s still has the deleted control service", n.Name)
			}
			return nil
		})
	}
	// The status is written after HNS: a later step's baseline must not count the control service.
	waitDesired(t, before, 0)
}

// desiredLBs is the number of load balancers each Windows node's status reports as desired.
func desiredLBs(t *testing.T) map[string]int32 {
	t.Helper()
	out := map[string]int32{}
	for _, n := range windowsNodes() {
		out[n.Name] = getWPN(t, n.Name).Status.LoadBalancers.Desired
	}
	return out
}

// waitDesired waits until each Windows node's status reports delta desired load balancers more
// than in before.
func waitDesired(t *testing.T, before map[string]int32, delta int32) {
	t.Helper()
	for _, n := range windowsNodes() {
		testenv.Eventually(t, 30*time.Second, func() error {
			got, want := getWPN(t, n.Name).Status.LoadBalancers.Desired, before[n.Name]+delta
			if got != want {
				return fmt.Errorf("%s reports %d desired load balancers, want %d", n.Name, got, want)
			}
			return nil
		})
	}
}

// createService creates a ClusterIP Service on port 80 and its EndpointSlice, one endpoint on
// linux-1, and returns both.
func createService(t *testing.T, name, ip string, labels map[string]string) []client.Object {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: fleet.Namespace, Name: name, Labels: labels},
		Spec:       corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: fleet.Namespace, Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Protocol: ptr(corev1.ProtocolTCP), Port: ptr(int32(8080))}},
		Endpoints:   []discoveryv1.Endpoint{fleet.Endpoint(fleet.Pod{Node: "linux-1", IP: "10.244.0.40"})},
	}
	for _, obj := range []client.Object{svc, slice} {
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	return []client.Object{svc, slice}
}

// statusFollowsAService: the status's figures follow a Service created and deleted, although the
// agent skips building the status while its inputs stay those of a build that found nothing to
// write: each node reports one load balancer more, syncs at least twice with nothing new (the
// status stays as written), then reports the count it had once the Service is gone.
func (s *system) statusFollowsAService(t *testing.T) {
	ctx := context.Background()
	syncs := func(node string) float64 {
		v, err := s.agents[node].Metric("winproxy_agent_syncs_total")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := desiredLBs(t)
	created := createService(t, "counted", "10.0.0.112", nil)
	waitDesired(t, before, 1)
	// Two more syncs each, the sync period's: the second finds the status as written and is
	// remembered as one that changed nothing.
	for _, n := range windowsNodes() {
		from := syncs(n.Name)
		testenv.Eventually(t, 30*time.Second, func() error {
			if got := syncs(n.Name); got < from+2 {
				return fmt.Errorf("%s synced %v times since, want 2", n.Name, got-from)
			}
			return nil
		})
	}
	for _, obj := range created {
		if err := env.Client.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	waitDesired(t, before, 0)
}

// kubeProxySLIs: the agent exports kube-proxy's SLIs under their names, and one EndpointSlice
// change with a trigger time gives one network-programming observation.
func (s *system) kubeProxySLIs(t *testing.T) {
	agent := s.agents["win-2025"]
	metric := func(name string, labels ...string) float64 {
		v, err := agent.Metric(name, labels...)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, name := range []string{
		"kubeproxy_sync_proxy_rules_duration_seconds_count", "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
		"kubeproxy_sync_proxy_rules_endpoint_changes_total", "kubeproxy_sync_proxy_rules_service_changes_total",
		"kubeproxy_proxy_healthz_total",
	} {
		if v := metric(name); v <= 0 {
			t.Errorf("%s = %v, want > 0 after syncs", name, v)
		}
	}
	if last := metric("kubeproxy_sync_proxy_rules_last_timestamp_seconds", `ip_family="IPv4"`); time.Since(time.Unix(int64(last), 0)) > time.Hour {
		t.Errorf("last sync timestamp %v is not recent", time.Unix(int64(last), 0))
	}

	before := metric("kubeproxy_network_programming_duration_seconds_count", `ip_family="IPv4"`)
	scaleWithTrigger(t, "legacy", fleet.Pod{Node: "linux-1", IP: "10.244.0.41"}, time.Now())
	for _, n := range windowsNodes() {
		testenv.Eventually(t, 30*time.Second, func() error {
			if !strings.Contains(s.table(t, n.Name), "10.244.0.41") {
				return fmt.Errorf("%s has not programmed the new legacy backend", n.Name)
			}
			return nil
		})
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		if got := metric("kubeproxy_network_programming_duration_seconds_count", `ip_family="IPv4"`) - before; got != 1 {
			return fmt.Errorf("%v network programming observations, want 1", got)
		}
		return nil
	})
	sum := metric("kubeproxy_network_programming_duration_seconds_sum", `ip_family="IPv4"`)
	t.Logf("network programming latency observed; histogram sum now %.3fs", sum)
}

// scaleWithTrigger adds a pod to a sample service's slice with the EndpointSlice controller's
// last-change-trigger-time annotation.
func scaleWithTrigger(t *testing.T, service string, pod fleet.Pod, at time.Time) {
	t.Helper()
	ctx := context.Background()
	slice := &discoveryv1.EndpointSlice{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: fleet.Namespace, Name: fleet.SliceName(service)}, slice); err != nil {
		t.Fatal(err)
	}
	slice.Endpoints = append(slice.Endpoints, fleet.Endpoint(pod))
	if slice.Annotations == nil {
		slice.Annotations = map[string]string{}
	}
	slice.Annotations[corev1.EndpointsLastChangeTriggerTime] = at.UTC().Format(time.RFC3339Nano)
	if err := env.Client.Update(ctx, slice); err != nil {
		t.Fatal(err)
	}
}

// inClusterAPIAccess: an agent on in-cluster settings whose KUBERNETES_SERVICE_HOST is the
// kubernetes Service ClusterIP, unreachable as on a rebooted Windows node, fails fast and names the
// setting to use; given a node-reachable address (what the chart's apiServer values set) it works.
func inClusterAPIAccess(t *testing.T, dir, binDir string) {
	ctx := context.Background()
	// A Windows node no config selects: its agent has nothing to program, which is enough to show
	// it reached the API server.
	node := fleet.Node{Name: "win-rebooted", Windows: true, KubeletVersion: "v1.34.1", Profile: "ws2022", Build: "10.0.20348", IP: "172.20.0.19", PodCIDR: "10.244.9.0/24"}
	obj := node.Object()
	delete(obj.Labels, fleet.CNILabel)
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, obj) })
	host := filepath.Join(dir, node.Name+".hns.json")
	if err := fleet.SeedHost(host, node, append(fleet.Nodes, node)); err != nil {
		t.Fatal(err)
	}
	sandbox := serviceAccountSandbox(t, dir)

	// Nothing listens on this loopback port: it stands for the ClusterIP nothing programmed yet.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	clusterIP, clusterPort, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	inCluster := func(host, port string) fleet.AgentOptions {
		return fleet.AgentOptions{
			HealthIP: node.LoopbackIP(e2eHealthSubnet),
			Env: []string{"KUBECONFIG=", "HOME=" + dir, "CONTAINER_SANDBOX_MOUNT_POINT=" + sandbox,
				"KUBERNETES_SERVICE_HOST=" + host, "KUBERNETES_SERVICE_PORT=" + port},
			Args: []string{"--api-server-wait=2s"},
		}
	}
	agent, err := fleet.StartAgent(binDir, dir, host, node, inCluster(clusterIP, clusterPort))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code := agent.Wait(30 * time.Second)
	if code <= 0 {
		agent.Kill()
		t.Fatalf("the agent on an unreachable ClusterIP did not fail (exit code %d):\n%s", code, agent.Tail(10))
	}
	log := agent.Tail(5)
	if !strings.Contains(log, "apiServer.host") || !strings.Contains(log, "ClusterIP") {
		t.Errorf("the agent's message does not name the setting to use:\n%s", log)
	}
	t.Logf("failed after %v with: %s", time.Since(start).Round(100*time.Millisecond), lastLine(log))

	// The chart's apiServer values point KUBERNETES_SERVICE_HOST/PORT at the API server itself.
	api, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	apiHost, apiPort := api.Hostname(), api.Port()
	agent, err = fleet.StartAgent(binDir, dir, host, node, inCluster(apiHost, apiPort))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(agent.Stop)
	waitAgentReady(t, agent, 60*time.Second)
}

// waitAgentReady waits until a started agent process is ready, failing at once if it exits.
func waitAgentReady(t *testing.T, agent *fleet.Process, timeout time.Duration) {
	t.Helper()
	testenv.Eventually(t, timeout, func() error {
		if agent.Exited() {
			return fmt.Errorf("the agent exited:\n%s", agent.Tail(20))
		}
		if !agent.Ready() {
			return fmt.Errorf("the agent is not ready:\n%s", agent.Tail(5))
		}
		return nil
	})
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// serviceAccountSandbox writes what a HostProcess pod finds under CONTAINER_SANDBOX_MOUNT_POINT:
// a service-account token the apiserver issued (for an account allowed what the agent's role
// allows) and the cluster's CA.
func serviceAccountSandbox(t *testing.T, dir string) string {
	t.Helper()
	ctx := context.Background()
	const ns, sa = "kube-system", "winproxy-agent-incluster"
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: sa},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: sa}},
		},
	}
	for _, obj := range objs {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(ctx, obj) })
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sandbox := filepath.Join(dir, "sandbox")
	secrets := filepath.Join(sandbox, "var", "run", "secrets", "kubernetes.io", "serviceaccount")
	if err := os.MkdirAll(secrets, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"token": []byte(tok.Status.Token), "ca.crt": env.Config.CAData} {
		if err := os.WriteFile(filepath.Join(secrets, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return sandbox
}

// hungHNS: an HNS whose calls never return (a wedged service) is reported within seconds, not
// hidden: the sync fails with a timeout in the status, the proxy health server drains the node, the
// agent's own liveness fails so the kubelet would restart it, and the agent stops its heartbeat
// saying its sync loop is stuck, so the node is reported stuck within the grace period (not only
// as pod restarts); when HNS answers again the node is programmed as before, nothing lost.
func (s *system) hungHNS(t *testing.T) {
	const node = "win-2022"
	n, _ := fleet.Find(node)
	before := s.table(t, node)
	setHung := func(hung bool) {
		h, err := fleet.OpenHost(s.hosts[node], n)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		if err := h.SetHNSHung(hung); err != nil {
			t.Fatal(err)
		}
	}
	setHung(true)
	hungAt := time.Now()
	liveness := strings.TrimSuffix(s.agents[node].HealthURL, "/readyz") + "/healthz"
	testenv.Eventually(t, 60*time.Second, func() error {
		wpn := getWPN(t, node)
		c := meta.FindStatusCondition(wpn.Status.Conditions, v1alpha1.ConditionProgrammed)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "timed out") {
			return fmt.Errorf("Programmed = %+v, want False saying an HNS call timed out", c)
		}
		return nil
	})
	t.Logf("a hung HNS was reported in status after %v", time.Since(hungAt).Round(100*time.Millisecond))
	testenv.Eventually(t, 60*time.Second, func() error {
		wpn := getWPN(t, node)
		if got := condition(wpn, v1alpha1.ConditionAgentAlive) + " " + condition(wpn, v1alpha1.ConditionStalled); got != "False/SyncLoopStuck True/SyncLoopStuck" {
			return fmt.Errorf("AgentAlive, Stalled = %s, want the node reported stuck", got)
		}
		if p := s.proxyHealth(node, "livez"); p.code != 503 {
			return fmt.Errorf("/livez = %v, want 503", p)
		}
		resp, err := http.Get(liveness)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			return fmt.Errorf("the agent's own /healthz still says 200")
		}
		return nil
	})
	stuckAfter := time.Since(hungAt)
	t.Logf("the node was reported stuck, /livez and liveness failing, %v after HNS hung (grace period %v)", stuckAfter.Round(100*time.Millisecond), e2eGracePeriod)
	if stuckAfter > e2eGracePeriod+5*time.Second {
		t.Errorf("the stuck node was reported after %v, want within about the grace period (%v): the heartbeat must stop when the sync loop does", stuckAfter, e2eGracePeriod)
	}

	setHung(false)
	testenv.Eventually(t, 60*time.Second, func() error {
		wpn := getWPN(t, node)
		if !programmed(wpn) {
			return fmt.Errorf("%s not programmed again after HNS came back", node)
		}
		if got := condition(wpn, v1alpha1.ConditionAgentAlive) + " " + condition(wpn, v1alpha1.ConditionReady); got != "True/HeartbeatRenewed True/Synced" {
			return fmt.Errorf("AgentAlive, Ready = %s after HNS came back", got)
		}
		if p := s.proxyHealth(node, "livez"); p.code != 200 {
			return fmt.Errorf("/livez = %v after HNS came back", p)
		}
		return nil
	})
	if after := s.table(t, node); after != before {
		t.Errorf("HNS changed across the hang:\n%s\nwas:\n%s", after, before)
	}
}
