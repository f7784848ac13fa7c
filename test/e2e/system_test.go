//go:build !windows

package e2e

import (
	"context"
	"fmt"

	"path/filepath"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hnsdump"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/fleet"
	"github.com/winproxy/winproxy/internal/testenv"
)

// system is the whole product on one machine: the real controller and three real agent processes,
// each on its own simulated Windows host persisted to a file, against the test apiserver.
type system struct {
	dir        string
	controller *fleet.Process
	agents     map[string]*fleet.Process
	hosts      map[string]string
}

func windowsNodes() []fleet.Node {
	var out []fleet.Node
	for _, n := range fleet.Nodes {
		if n.Windows {
			out = append(out, n)
		}
	}
	return out
}

// e2eGracePeriod is the controller's --node-grace-period in the end-to-end system: eight of the
// agents' one-second heartbeats.
const e2eGracePeriod = 8 * time.Second

// e2eHealthSubnet is the loopback subnet of the end-to-end agents' health servers (see
// fleet.Node.LoopbackIP); the demo's test uses another.
const e2eHealthSubnet = 1

func startSystem(t *testing.T) *system {
	t.Helper()
	ctx := context.Background()
	s := &system{dir: t.TempDir(), agents: map[string]*fleet.Process{}, hosts: map[string]string{}}
	binDir := filepath.Join(s.dir, "bin")
	if err := fleet.Build(ctx, env.RepoRoot, binDir); err != nil {
		t.Fatal(err)
	}
	if err := fleet.CreateNodes(ctx, env.Client, fleet.Nodes); err != nil {
		t.Fatal(err)
	}
	if err := fleet.CreateWorkloads(ctx, env.Client); err != nil {
		t.Fatal(err)
	}
	for _, n := range windowsNodes() {
		s.hosts[n.Name] = filepath.Join(s.dir, n.Name+".hns.json")
		if err := fleet.SeedHost(s.hosts[n.Name], n, fleet.Nodes); err != nil {
			t.Fatal(err)
		}
		s.syncPods(t, n.Name)
	}
	var err error
	// A short grace period and interval, so that a stopped agent is reported within seconds.
	if s.controller, err = fleet.StartController(binDir, env.Kubeconfig, s.dir, "--node-grace-period="+e2eGracePeriod.String()); err != nil {
		t.Fatal(err)
	}
	for _, n := range windowsNodes() {
		if s.agents[n.Name], err = fleet.StartAgent(binDir, s.dir, s.hosts[n.Name], n, fleet.AgentOptions{
			Kubeconfig: env.Kubeconfig, HealthIP: n.LoopbackIP(e2eHealthSubnet),
			// Short enough for the hung-HNS test to see the agent give up within seconds.
			Args: []string{"--hns-call-timeout=2s", "--heartbeat-interval=1s"},
		}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, a := range s.agents {
			a.Stop()
		}
		s.controller.Stop()
		if t.Failed() {
			t.Logf("controller log:\n%s", s.controller.Tail(40))
			for name, a := range s.agents {
				t.Logf("agent %s log:\n%s", name, a.Tail(40))
			}
		}
	})
	return s
}

// syncPods plays the CNI on a node's host: pod endpoints follow the EndpointSlices.
func (s *system) syncPods(t *testing.T, node string) {
	t.Helper()
	n, _ := fleet.Find(node)
	if _, _, err := fleet.SyncPods(context.Background(), env.Client, s.hosts[node], n); err != nil {
		t.Fatal(err)
	}
}

// host reads a node's simulated host.
func (s *system) host(t *testing.T, node string) ([]hns.LoadBalancer, []hns.Endpoint) {
	t.Helper()
	n, _ := fleet.Find(node)
	h, err := fleet.OpenHost(s.hosts[node], n)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	st, err := h.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return st.LoadBalancers, st.Endpoints
}

// table renders a node's load balancers as `winproxy-agent hns dump` does.
func (s *system) table(t *testing.T, node string) string {
	t.Helper()
	lbs, eps := s.host(t, node)
	var b strings.Builder
	if err := hnsdump.LoadBalancers(&b, lbs, eps); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// lbIDs maps each load balancer's frontend to its ID.
func (s *system) lbIDs(t *testing.T, node string) map[string]string {
	t.Helper()
	lbs, _ := s.host(t, node)
	ids := map[string]string{}
	for _, lb := range lbs {
		ids[lb.Frontend().String()] = lb.ID
	}
	return ids
}

func (s *system) writes(t *testing.T, node string) float64 {
	t.Helper()
	w, err := s.agents[node].HNSWrites()
	if err != nil {
		t.Fatalf("reading the metrics of agent %s: %v", node, err)
	}
	return w
}

func getWPC(t *testing.T, name string) *v1alpha1.WindowsProxyConfig {
	t.Helper()
	wpc := &v1alpha1.WindowsProxyConfig{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, wpc); err != nil {
		t.Fatal(err)
	}
	return wpc
}

func getWPN(t *testing.T, name string) *v1alpha1.WindowsProxyNode {
	t.Helper()
	wpn := &v1alpha1.WindowsProxyNode{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, wpn); err != nil {
		t.Fatal(err)
	}
	return wpn
}

// programmed reports whether a node's agent reports Programmed for the node's current spec.
func programmed(wpn *v1alpha1.WindowsProxyNode) bool {
	c := meta.FindStatusCondition(wpn.Status.Conditions, v1alpha1.ConditionProgrammed)
	return wpn.Status.ObservedHash == wpn.Spec.Hash && c != nil && c.Status == metav1.ConditionTrue
}

// ready waits for the config's Ready condition at its current generation.
func ready(t *testing.T, name string) {
	t.Helper()
	testenv.Eventually(t, 90*time.Second, func() error {
		wpc := getWPC(t, name)
		c := meta.FindStatusCondition(wpc.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil {
			return fmt.Errorf("config %s has no Ready condition", name)
		}
		if c.Status == metav1.ConditionTrue && c.ObservedGeneration == wpc.Generation && wpc.Status.ObservedGeneration == wpc.Generation {
			return nil
		}
		return fmt.Errorf("config %s: Ready=%s (%s: %s), nodes %+v", name, c.Status, c.Reason, c.Message, wpc.Status.Nodes)
	})
}

const systemConfig = "calico"

// applyConfig creates or updates the system's config.
func applyConfig(t *testing.T, mutate func(*v1alpha1.WindowsProxyConfigSpec)) {
	t.Helper()
	ctx := context.Background()
	wpc := &v1alpha1.WindowsProxyConfig{ObjectMeta: metav1.ObjectMeta{Name: systemConfig}}
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(wpc), wpc)
	create := err != nil
	if create {
		wpc.Spec = v1alpha1.WindowsProxyConfigSpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{fleet.CNILabel: "calico"}},
			Network:      v1alpha1.NetworkSpec{Name: fleet.NetworkName, Type: v1alpha1.NetworkTypeOverlay},
			Overlay: &v1alpha1.OverlaySpec{SourceVIP: v1alpha1.SourceVIPSpec{
				Strategy: v1alpha1.SourceVIPStrategyEndpoint,
				Endpoint: &v1alpha1.SourceVIPEndpoint{Name: fleet.SourceVIPEndpointName},
			}},
			DualStack: v1alpha1.DualStackSpec{Enabled: true},
			Sync:      v1alpha1.SyncSpec{PeriodSeconds: 3, MinPeriodSeconds: 0},
			Rollout:   v1alpha1.RolloutSpec{MaxUnavailable: ptrIntOrString(intstr.FromInt32(1)), ProgressDeadlineSeconds: 60},
		}
	}
	if create {
		mutate(&wpc.Spec)
		err = env.Client.Create(ctx, wpc)
	} else {
		// The controller writes the status meanwhile: retry on a conflict with a fresh copy.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(wpc), wpc); err != nil {
				return err
			}
			mutate(&wpc.Spec)
			return env.Client.Update(ctx, wpc)
		})
	}
	if err != nil {
		t.Fatal(err)
	}
}

func ptrIntOrString(v intstr.IntOrString) *intstr.IntOrString { return &v }

func TestSystem(t *testing.T) {
	s := startSystem(t)
	// Before startSystem's cleanup, with the controller still up: the tests after this one start
	// their own system.
	t.Cleanup(func() { deleteSystemObjects(t) })

	t.Run("overlay with dual-stack requested is programmed everywhere, downgraded to IPv4", func(t *testing.T) {
		applyConfig(t, func(*v1alpha1.WindowsProxyConfigSpec) {})
		ready(t, systemConfig)
		kubectl(t, "wait", "--for=condition=Ready", "wpc/"+systemConfig, "--timeout=30s")
		out := kubectl(t, "get", "wpc", systemConfig)
		if r := row(t, out, systemConfig); strings.Join(r[1:7], " ") != "false Overlay 3 3 3 True" {
			t.Errorf("kubectl get wpc row = %v, want DSR false, NETWORK Overlay, NODES 3, PROGRAMMED 3, DOWNGRADED 3, READY True\n%s", r, out)
		}
		for _, n := range windowsNodes() {
			wpn := getWPN(t, n.Name)
			c := meta.FindStatusCondition(wpn.Status.Conditions, v1alpha1.ConditionDualStackDowngraded)
			if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonOverlayNetwork {
				t.Errorf("%s DualStackDowngraded = %+v, want True/OverlayNetwork", n.Name, c)
			}
			// Events are sent asynchronously.
			testenv.Eventually(t, 10*time.Second, func() error { return hasEvent(n.Name, v1alpha1.ConditionDualStackDowngraded) })
			if got := wpn.Status.SourceVIP.Address; got != n.SourceVIP().String() {
				t.Errorf("%s source VIP = %q, want %s (Calico_ep)", n.Name, got, n.SourceVIP())
			}
		}
		// win-2019 in full: every kind of load balancer with its flags, source VIP and backends.
		// Its HNS (9.5) has DSR, so externalTrafficPolicy: Local gives DSR on the node port and
		// ingress load balancers with local backends only, but no session affinity. The
		// apiserver's own service (10.0.0.1, a random target port) is left out.
		want := `VIP           PORTS        PROTO  FLAGS  PORT FLAGS                    SOURCE VIP   AFFINITY  BACKENDS
(node ports)  30080->8080  TCP    DSR    LocalRoutedVIP,VipExternalIP  10.244.1.2   -         10.244.1.7
(node ports)  30443->8443  TCP    -      LocalRoutedVIP,VipExternalIP  10.244.1.2   -         10.244.2.6,10.244.3.6
10.0.0.100    80->8080     TCP    -      -                             10.244.1.2   -         10.244.0.5,10.244.1.5,10.244.2.5,10.244.3.5
10.0.0.101    443->8443    TCP    -      -                             10.244.1.2   -         10.244.2.6,10.244.3.6
10.0.0.102    80->8080     TCP    -      -                             10.244.1.2   -         10.244.1.7,10.244.2.7,10.244.3.7
10.0.0.103    8080->80     TCP    -      -                             10.244.1.2   -         10.244.0.8,10.244.3.8
10.0.0.104    6379->6379   TCP    -      -                             10.244.1.2   -         10.244.1.9,10.244.2.9
10.0.0.105    53->5353     UDP    -      -                             10.244.1.2   -         10.244.0.10,10.244.3.10
20.0.0.10     80->8080     TCP    DSR    VipExternalIP                 10.244.1.2   -         10.244.1.7
20.0.0.20     8080->80     TCP    -      VipExternalIP                 10.244.1.2   -         10.244.0.8,10.244.3.8
`
		if got := withoutAPIServer(s.table(t, "win-2019")); got != want {
			t.Errorf("win-2019 load balancers:\n%s\nwant:\n%s", got, want)
		}
		// The other hosts differ only in their source VIP, local backends and, with an HNS of
		// 12.0 or later, ClientIP affinity.
		for _, n := range windowsNodes()[1:] {
			table := s.table(t, n.Name)
			for _, line := range []string{
				"(node ports)  30080->8080  TCP    DSR    LocalRoutedVIP,VipExternalIP  " + n.SourceVIP().String(),
				"10.0.0.104    6379->6379   TCP    -      -                             " + n.SourceVIP().String() + "   ClientIP  10.244.1.9,10.244.2.9",
				"20.0.0.10     80->8080     TCP    DSR    VipExternalIP                 " + n.SourceVIP().String(),
			} {
				if !strings.Contains(table, line) {
					t.Errorf("%s has no load balancer line %q:\n%s", n.Name, line, table)
				}
			}
			if lbs, _ := s.host(t, n.Name); len(lbs) != 11 {
				t.Errorf("%s has %d load balancers, want 11:\n%s", n.Name, len(lbs), table)
			}
		}
	})

	// What kube-proxy does for a node, the agent does too (issue #10).
	t.Run("every node answers load-balancer health checks as kube-proxy does", s.healthChecks)
	t.Run("a Service labelled for another proxy gets no load balancer", s.serviceSelection)
	t.Run("the status's figures follow a Service created and deleted, with quiet syncs between", s.statusFollowsAService)
	t.Run("kube-proxy's SLIs are exported under their names", s.kubeProxySLIs)
	t.Run("a killed agent's health servers answer again after a restart without HNS writes", s.killedHealthServers)
	t.Run("a hung HNS is reported within seconds and nothing is lost when it answers again", s.hungHNS)
	t.Run("an agent stopped for good is reported lost, and Ready again when it comes back", s.agentSilent)
	t.Run("an agent on an unreachable ClusterIP fails fast and names the setting; with the setting it works", func(t *testing.T) {
		inClusterAPIAccess(t, s.dir, filepath.Join(s.dir, "bin"))
	})

	t.Run("DSR without WinDSR leaves win-2019 on its last good config while the others roll out", func(t *testing.T) {
		before := getWPN(t, "win-2019").Spec.Hash
		applyConfig(t, func(spec *v1alpha1.WindowsProxyConfigSpec) { spec.DSR.Enabled = true })
		testenv.Eventually(t, 60*time.Second, func() error {
			for _, name := range []string{"win-2022", "win-2025"} {
				if wpn := getWPN(t, name); !programmed(wpn) || !wpn.Spec.Proxy.EnableDSR {
					return fmt.Errorf("%s has not programmed the DSR config yet", name)
				}
			}
			wpc := getWPC(t, systemConfig)
			for _, f := range wpc.Status.FailingNodes {
				if f.Name == "win-2019" && f.Reason == v1alpha1.ReasonFeatureGateDisabled {
					return nil
				}
			}
			return fmt.Errorf("win-2019 not reported as failing: %+v", wpc.Status.FailingNodes)
		})
		wpn := getWPN(t, "win-2019")
		if wpn.Spec.Hash != before || wpn.Spec.Proxy.EnableDSR || !programmed(wpn) {
			t.Errorf("win-2019 left its last good config: hash %s (was %s), DSR %v, programmed %v", wpn.Spec.Hash, before, wpn.Spec.Proxy.EnableDSR, programmed(wpn))
		}
		wpc := getWPC(t, systemConfig)
		for _, f := range wpc.Status.FailingNodes {
			if f.Name == "win-2019" && !strings.Contains(f.Message, "WinDSR") {
				t.Errorf("win-2019's failure does not name the gate: %q", f.Message)
			}
		}
		if c := meta.FindStatusCondition(wpc.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse {
			t.Errorf("Ready = %+v, want False while win-2019 cannot take the config", c)
		}
		if !strings.Contains(s.table(t, "win-2025"), "10.0.0.100    80->8080     TCP    DSR") {
			t.Errorf("win-2025 ClusterIP load balancer has no DSR flag:\n%s", s.table(t, "win-2025"))
		}
		if strings.Contains(s.table(t, "win-2019"), "10.0.0.100    80->8080     TCP    DSR") {
			t.Errorf("win-2019 got DSR without the gate:\n%s", s.table(t, "win-2019"))
		}
	})

	t.Run("WinDSR true brings win-2019 along", func(t *testing.T) {
		applyConfig(t, func(spec *v1alpha1.WindowsProxyConfigSpec) { spec.FeatureGates = map[string]bool{"WinDSR": true} })
		ready(t, systemConfig)
		for _, n := range windowsNodes() {
			if wpn := getWPN(t, n.Name); !wpn.Status.DSR.Active {
				t.Errorf("%s: DSR not active: %+v", n.Name, wpn.Status.DSR)
			}
		}
	})

	t.Run("turning DSR off rolls out node by node and modifies in place where HNS can", func(t *testing.T) {
		ids := map[string]map[string]string{}
		for _, n := range windowsNodes() {
			ids[n.Name] = s.lbIDs(t, n.Name)
		}
		applyConfig(t, func(spec *v1alpha1.WindowsProxyConfigSpec) { spec.DSR.Enabled = false })
		var maxInFlight int
		testenv.Eventually(t, 90*time.Second, func() error {
			var list v1alpha1.WindowsProxyNodeList
			if err := env.Client.List(context.Background(), &list); err != nil {
				return err
			}
			inFlight, done := 0, 0
			for _, wpn := range list.Items {
				if wpn.Spec.Proxy.EnableDSR {
					continue
				}
				if programmed(&wpn) {
					done++
				} else {
					inFlight++
				}
			}
			maxInFlight = max(maxInFlight, inFlight)
			if done == 3 {
				return nil
			}
			return fmt.Errorf("%d of 3 nodes without DSR programmed", done)
		})
		if maxInFlight > 1 {
			t.Errorf("%d nodes were moving to the new config at once; maxUnavailable is 1", maxInFlight)
		}
		ready(t, systemConfig)
		clusterIP := "TCP/10.0.0.100:80->8080(v4)"
		if after := s.lbIDs(t, "win-2025"); after[clusterIP] != ids["win-2025"][clusterIP] {
			t.Errorf("win-2025 (HNS 15.5, modify) replaced its ClusterIP load balancer instead of modifying it")
		}
		if after := s.lbIDs(t, "win-2022"); after[clusterIP] == ids["win-2022"][clusterIP] {
			t.Errorf("win-2022 (HNS 13.3, no modify) kept the load balancer ID; it cannot have changed the flags")
		}
		if strings.Contains(s.table(t, "win-2025"), "10.0.0.100    80->8080     TCP    DSR") {
			t.Errorf("win-2025 still has DSR:\n%s", s.table(t, "win-2025"))
		}
	})

	t.Run("a new endpoint rewrites only the affected load balancer", func(t *testing.T) {
		ids := map[string]map[string]string{}
		writes := map[string]float64{}
		for _, n := range windowsNodes() {
			ids[n.Name], writes[n.Name] = s.lbIDs(t, n.Name), s.writes(t, n.Name)
		}
		scale(t, "web", fleet.Pod{Node: "win-2025", IP: "10.244.3.20"})
		s.syncPods(t, "win-2025")
		for _, n := range windowsNodes() {
			testenv.Eventually(t, 30*time.Second, func() error {
				if !strings.Contains(s.table(t, n.Name), "10.244.0.5,10.244.1.5,10.244.2.5,10.244.3.20,10.244.3.5") {
					return fmt.Errorf("%s has not added the new web backend", n.Name)
				}
				return nil
			})
		}
		// win-2025 modifies in place (1 write); the others create the remote endpoint and
		// delete+create the load balancer (3 writes).
		for name, want := range map[string]float64{"win-2019": 3, "win-2022": 3, "win-2025": 1} {
			if got := s.writes(t, name) - writes[name]; got != want {
				t.Errorf("%s made %v HNS writes for one new endpoint, want %v", name, got, want)
			}
			for frontend, id := range s.lbIDs(t, name) {
				if frontend != "TCP/10.0.0.100:80->8080(v4)" && ids[name][frontend] != id {
					t.Errorf("%s: load balancer %s changed ID though its service did not change", name, frontend)
				}
			}
		}
	})

	t.Run("a killed agent restarts with zero HNS writes", func(t *testing.T) {
		agent := s.agents["win-2022"]
		before := s.table(t, "win-2022")
		agent.Kill()
		if err := agent.Start(); err != nil {
			t.Fatal(err)
		}
		waitAgentReady(t, agent, 30*time.Second)
		if w := s.writes(t, "win-2022"); w != 0 {
			t.Errorf("the restarted agent made %v HNS writes, want 0", w)
		}
		if after := s.table(t, "win-2022"); after != before {
			t.Errorf("HNS changed across the restart:\n%s\nwas:\n%s", after, before)
		}
	})

	t.Run("a load balancer deleted behind the agent's back is restored within one sync period", func(t *testing.T) {
		n, _ := fleet.Find("win-2019")
		h, err := fleet.OpenHost(s.hosts[n.Name], n)
		if err != nil {
			t.Fatal(err)
		}
		id := s.lbIDs(t, n.Name)["TCP/10.0.0.101:443->8443(v4)"]
		if err := h.RemoveLoadBalancer(id); err != nil {
			t.Fatal(err)
		}
		h.Close()
		repairs, _ := s.agents[n.Name].Metric("winproxy_agent_drift_repairs_total")
		deleted := time.Now()
		testenv.Eventually(t, 3*time.Second+5*time.Second, func() error {
			if s.lbIDs(t, n.Name)["TCP/10.0.0.101:443->8443(v4)"] == "" {
				return fmt.Errorf("the api ClusterIP load balancer was not restored")
			}
			return nil
		})
		t.Logf("restored after %v (sync period 3s)", time.Since(deleted).Round(100*time.Millisecond))
		testenv.Eventually(t, 5*time.Second, func() error {
			if after, _ := s.agents[n.Name].Metric("winproxy_agent_drift_repairs_total"); after <= repairs {
				return fmt.Errorf("drift repairs metric did not grow from %v", repairs)
			}
			return nil
		})
		testenv.Eventually(t, 10*time.Second, func() error { return hasEvent(n.Name, "DriftRepaired") })
	})

	t.Run("a network recreated by the CNI is waited for, then programmed again", func(t *testing.T) {
		n, _ := fleet.Find("win-2025")
		h, err := fleet.OpenHost(s.hosts[n.Name], n)
		if err != nil {
			t.Fatal(err)
		}
		err = h.RemoveNetwork(fleet.NetworkName)
		h.Close()
		if err != nil {
			t.Fatal(err)
		}
		lbs, _ := s.host(t, n.Name)
		testenv.Eventually(t, 30*time.Second, func() error {
			wpn := getWPN(t, n.Name)
			c := meta.FindStatusCondition(wpn.Status.Conditions, v1alpha1.ConditionNetworkReady)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonNetworkNotFound {
				return fmt.Errorf("NetworkReady = %+v, want False/NetworkNotFound", c)
			}
			if programmed(wpn) {
				return fmt.Errorf("still Programmed without a network")
			}
			// Nothing is in effect, so nothing is claimed (issue #11).
			for _, typ := range []string{v1alpha1.ConditionDSRActive, v1alpha1.ConditionDualStackDowngraded} {
				if c := meta.FindStatusCondition(wpn.Status.Conditions, typ); c == nil || c.Status != metav1.ConditionUnknown {
					return fmt.Errorf("%s = %+v without a network, want Unknown", typ, c)
				}
			}
			if len(wpn.Status.IPFamilies) != 0 {
				return fmt.Errorf("families %v in effect without a network", wpn.Status.IPFamilies)
			}
			return nil
		})
		if s.agents[n.Name].Exited() {
			t.Fatalf("the agent exited without its network:\n%s", s.agents[n.Name].Tail(20))
		}
		if after, _ := s.host(t, n.Name); len(after) != len(lbs) {
			t.Errorf("the agent changed load balancers while waiting for the network: %d, was %d", len(after), len(lbs))
		}

		// Calico comes back with a new network (new ID) and the pods' endpoints.
		if err := fleet.SeedHost(s.hosts[n.Name], n, fleet.Nodes); err != nil {
			t.Fatal(err)
		}
		s.syncPods(t, n.Name)
		testenv.Eventually(t, 30*time.Second, func() error {
			if wpn := getWPN(t, n.Name); !programmed(wpn) {
				return fmt.Errorf("%s not programmed on the new network", n.Name)
			}
			return nil
		})
		if table := s.table(t, n.Name); strings.Contains(table, "?") || !strings.Contains(table, "10.244.0.5,10.244.1.5,10.244.2.5,10.244.3.20,10.244.3.5") {
			t.Errorf("load balancers not rebuilt on the new network's endpoints:\n%s", table)
		}
		ready(t, systemConfig)
	})

	t.Run("an apiserver restart leaves HNS alone and the agents resume", func(t *testing.T) {
		tables := map[string]string{}
		writes := map[string]float64{}
		for _, n := range windowsNodes() {
			tables[n.Name], writes[n.Name] = s.table(t, n.Name), s.writes(t, n.Name)
		}
		if err := env.RestartAPIServer(); err != nil {
			t.Fatal(err)
		}
		for _, n := range windowsNodes() {
			if got := s.writes(t, n.Name); got != writes[n.Name] {
				t.Errorf("%s made %v HNS writes while the apiserver restarted", n.Name, got-writes[n.Name])
			}
			if got := s.table(t, n.Name); got != tables[n.Name] {
				t.Errorf("%s's HNS changed while the apiserver restarted:\n%s", n.Name, got)
			}
		}
		scale(t, "api", fleet.Pod{Node: "win-2019", IP: "10.244.1.21"})
		s.syncPods(t, "win-2019")
		for _, n := range windowsNodes() {
			testenv.Eventually(t, 60*time.Second, func() error {
				if !strings.Contains(s.table(t, n.Name), "10.244.1.21") {
					return fmt.Errorf("%s did not program the api backend added after the apiserver restart", n.Name)
				}
				return nil
			})
		}
	})
}

// scale adds a ready pod to a sample service's EndpointSlice, as the EndpointSlice controller does
// when a deployment scales up.
func scale(t *testing.T, service string, pod fleet.Pod) {
	t.Helper()
	ctx := context.Background()
	slice := &discoveryv1.EndpointSlice{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: fleet.Namespace, Name: fleet.SliceName(service)}, slice); err != nil {
		t.Fatal(err)
	}
	slice.Endpoints = append(slice.Endpoints, fleet.Endpoint(pod))
	if err := env.Client.Update(ctx, slice); err != nil {
		t.Fatal(err)
	}
}

// hasEvent reports whether the agent recorded an event with the reason about a node's
// WindowsProxyNode.
func hasEvent(node, reason string) error {
	var events eventsv1.EventList
	if err := env.Client.List(context.Background(), &events); err != nil {
		return err
	}
	for _, e := range events.Items {
		if e.Regarding.Kind == "WindowsProxyNode" && e.Regarding.Name == node && e.Reason == reason {
			return nil
		}
	}
	return fmt.Errorf("no %s event about WindowsProxyNode %s among %d events", reason, node, len(events.Items))
}

// withoutAPIServer drops the line of the apiserver's own service, whose target port is random.
func withoutAPIServer(table string) string {
	var keep []string
	for _, line := range strings.SplitAfter(table, "\n") {
		if !strings.HasPrefix(line, "10.0.0.1 ") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "")
}
