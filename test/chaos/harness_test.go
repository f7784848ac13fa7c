//go:build !windows

// Package chaos runs winproxy under the conditions an adversarial run found harmful and checks
// that nothing is lost: agents SIGKILLed mid-sync, HNS failing a share of its calls, and hostile
// inputs. `make test` runs a bounded set; `make test-chaos` (WINPROXY_CHAOS=full) the full counts
// that docs/reliability.md reports.
package chaos

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/fleet"
	"github.com/winproxy/winproxy/internal/testenv"
)

// full is true under `make test-chaos`: the full counts instead of the bounded ones.
var full = os.Getenv("WINPROXY_CHAOS") == "full"

// scale picks the bounded or the full figure.
func scale[T any](bounded, fullRun T) T {
	if full {
		return fullRun
	}
	return bounded
}

// report collects the figures of a run, printed at the end for docs/reliability.md.
var report struct {
	sync.Mutex
	lines []string
}

func record(format string, args ...any) {
	report.Lock()
	defer report.Unlock()
	report.lines = append(report.lines, fmt.Sprintf(format, args...))
}

// The node under test is win-2025 (HNS 15.5: load balancers are modified in place, so a changed
// backend set never takes a load balancer away, and any absence the sampler sees is a loss).
var node, _ = fleet.Find("win-2025")

const namespace = "chaos"

// rig is one control plane, the controller and one agent on a persisted simulated host.
type rig struct {
	t      *testing.T
	env    *testenv.Env
	dir    string
	host   string
	agent  *fleet.Process
	ctrl   *fleet.Process
	model  *model
	binDir string
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "winproxy-chaos-bin-")
		if buildErr == nil {
			root, _ := testenv.RepoRoot()
			buildErr = fleet.Build(context.Background(), root, binDir)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// newRig starts a control plane of its own (the tests change nodes, configs and services freely),
// the fleet's nodes, n services and a config that selects win-2025 only.
func newRig(t *testing.T, services int) *rig {
	t.Helper()
	ctx := context.Background()
	e, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	r := &rig{t: t, env: e, dir: t.TempDir(), binDir: binaries(t)}
	if err := fleet.CreateNodes(ctx, e.Client, fleet.Nodes); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	r.model = newModel(services)
	for i := range services {
		if err := e.Client.Create(ctx, r.model.service(i)); err != nil {
			t.Fatal(err)
		}
		if err := e.Client.Create(ctx, r.model.slice(i)); err != nil {
			t.Fatal(err)
		}
	}
	r.host = filepath.Join(r.dir, node.Name+".hns.json")
	if err := fleet.SeedHost(r.host, node, fleet.Nodes); err != nil {
		t.Fatal(err)
	}
	if _, _, err := fleet.SyncPods(ctx, e.Client, r.host, node); err != nil {
		t.Fatal(err)
	}
	wpc := &v1alpha1.WindowsProxyConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "chaos"},
		Spec: v1alpha1.WindowsProxyConfigSpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/hostname": node.Name}},
			Network:      v1alpha1.NetworkSpec{Name: fleet.NetworkName, Type: v1alpha1.NetworkTypeOverlay},
			Overlay: &v1alpha1.OverlaySpec{SourceVIP: v1alpha1.SourceVIPSpec{
				Strategy: v1alpha1.SourceVIPStrategyEndpoint,
				Endpoint: &v1alpha1.SourceVIPEndpoint{Name: fleet.SourceVIPEndpointName},
			}},
			Sync: v1alpha1.SyncSpec{PeriodSeconds: 5},
		},
	}
	if err := e.Client.Create(ctx, wpc); err != nil {
		t.Fatal(err)
	}
	if r.ctrl, err = fleet.StartController(r.binDir, e.Kubeconfig, r.dir); err != nil {
		t.Fatal(err)
	}
	r.startAgent()
	t.Cleanup(func() {
		r.agent.Stop()
		r.ctrl.Stop()
		if t.Failed() {
			t.Logf("agent log:\n%s", r.agent.Tail(30))
		}
	})
	return r
}

func (r *rig) startAgent() {
	r.t.Helper()
	a, err := fleet.StartAgent(r.binDir, r.dir, r.host, node, fleet.AgentOptions{
		Kubeconfig: r.env.Kubeconfig, HealthIP: node.LoopbackIP(3), Args: []string{"--hns-call-timeout=5s"},
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.agent = a
}

// weather sets how the host's HNS behaves, for every process using it.
func (r *rig) weather(w sim.Weather) {
	r.t.Helper()
	h, err := fleet.OpenHost(r.host, node)
	if err != nil {
		r.t.Fatal(err)
	}
	defer h.Close()
	if err := h.SetWeather(w); err != nil {
		r.t.Fatal(err)
	}
}

// snapshot reads the host.
func (r *rig) snapshot() (sim.State, error) {
	h, err := fleet.OpenHost(r.host, node)
	if err != nil {
		return sim.State{}, err
	}
	defer h.Close()
	return h.Snapshot()
}

// settle waits until the agent reports Programmed for the node's current config and HNS holds
// exactly what the model says, and returns how long that took.
func (r *rig) settle(timeout time.Duration) (time.Duration, error) {
	start, said := time.Now(), time.Duration(0)
	var last error
	for time.Since(start) < timeout {
		if last = r.settled(); last == nil {
			return time.Since(start), nil
		}
		// What still differs, every 5 s once it takes longer than a sync period: a slow
		// convergence then says whether the status or HNS held it back.
		if d := time.Since(start); d-said >= 5*time.Second {
			said = d
			r.t.Logf("not settled after %v: %v", d.Round(time.Second), last)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start), fmt.Errorf("not settled after %v: %w", timeout, last)
}

func (r *rig) settled() error {
	wpn := &v1alpha1.WindowsProxyNode{}
	if err := r.env.Client.Get(context.Background(), client.ObjectKey{Name: node.Name}, wpn); err != nil {
		return err
	}
	c := meta.FindStatusCondition(wpn.Status.Conditions, v1alpha1.ConditionProgrammed)
	if wpn.Status.ObservedHash != wpn.Spec.Hash || c == nil || c.Status != metav1.ConditionTrue {
		return fmt.Errorf("not Programmed: %+v", c)
	}
	st, err := r.snapshot()
	if err != nil {
		return err
	}
	if diff := r.model.diff(st); diff != "" {
		return fmt.Errorf("HNS differs from the cluster: %s", diff)
	}
	return nil
}

// sampler looks at the host every 100 ms, as the adversarial run did, and counts the samples in
// which a load balancer the cluster wants (and that had been programmed) was missing.
type sampler struct {
	samples, losses int
	examples        []string
	stop            chan struct{}
	done            chan struct{}
}

func (r *rig) sample() *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
			st, err := r.snapshot()
			if err != nil {
				continue
			}
			s.samples++
			if missing := r.model.missing(st); len(missing) > 0 {
				s.losses++
				if len(s.examples) < 3 {
					s.examples = append(s.examples, strings.Join(missing, ","))
				}
			}
		}
	}()
	return s
}

func (s *sampler) finish() {
	close(s.stop)
	<-s.done
}

// model is the test's own account of the cluster: service i has ClusterIP 10.0.0.<i+10> (in the
// static band of the test control plane's service range, 10.0.0.0/16, so at most 240 services),
// port 80 -> 8080, one pod on win-2025 and remote pods on the other nodes.
type model struct {
	mu      sync.Mutex
	remotes [][]netip.Addr // per service, the remote pods' IPs
}

func newModel(n int) *model {
	m := &model{remotes: make([][]netip.Addr, n)}
	for i := range n {
		m.remotes[i] = []netip.Addr{remotePod(i, 0), remotePod(i, 1)}
	}
	return m
}

func clusterIP(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 10)})
}

func localPod(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, 244, 3, byte(i%240 + 10)})
}

// remotePod k of service i lives on win-2019 (k even) or win-2022 (k odd).
func remotePod(i, k int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, 244, byte(1 + k%2), byte((i*7+k)%240 + 10)})
}

func svcName(i int) string { return fmt.Sprintf("svc-%03d", i) }

func (m *model) service(i int) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: svcName(i)},
		Spec: corev1.ServiceSpec{
			ClusterIP: clusterIP(i).String(),
			Ports:     []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

func (m *model) slice(i int) *discoveryv1.EndpointSlice {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: namespace, Name: svcName(i), Labels: map[string]string{discoveryv1.LabelServiceName: svcName(i)}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](8080)}},
		Endpoints:   []discoveryv1.Endpoint{fleet.Endpoint(fleet.Pod{Node: node.Name, IP: localPod(i).String()})},
	}
	for _, ip := range m.remotes[i] {
		nodeName := "win-2019"
		if ip.As4()[2] == 2 {
			nodeName = "win-2022"
		}
		s.Endpoints = append(s.Endpoints, fleet.Endpoint(fleet.Pod{Node: nodeName, IP: ip.String()}))
	}
	return s
}

// churn gives service i a different set of remote pods, as a rolling update does.
func (m *model) churn(i, round int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.remotes[i] = []netip.Addr{remotePod(i+round, 0)}
	if round%2 == 0 {
		m.remotes[i] = append(m.remotes[i], remotePod(i+round, 1))
	}
}

// backends maps each load balancer's frontend VIP to its backend IPs.
func backends(st sim.State) map[netip.Addr][]netip.Addr {
	ips := map[string]netip.Addr{}
	for _, ep := range st.Endpoints {
		if len(ep.IPs) > 0 {
			ips[strings.ToUpper(ep.ID)] = ep.IPs[0]
		}
	}
	out := map[netip.Addr][]netip.Addr{}
	for _, lb := range st.LoadBalancers {
		var b []netip.Addr
		for _, id := range lb.BackendEndpointIDs {
			b = append(b, ips[strings.ToUpper(id)])
		}
		slices.SortFunc(b, netip.Addr.Compare)
		out[lb.VIP()] = b
	}
	return out
}

// missing lists the services whose load balancer is absent.
func (m *model) missing(st sim.State) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	have := backends(st)
	var out []string
	for i := range m.remotes {
		if _, ok := have[clusterIP(i)]; !ok {
			out = append(out, svcName(i))
		}
	}
	return out
}

// diff says how HNS differs from the model: a load balancer missing or with other backends, one
// for no service of the model (other than the apiserver's own), or a remote endpoint no load
// balancer uses (a leak).
func (m *model) diff(st sim.State) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	have := backends(st)
	var problems []string
	wantVIPs := map[netip.Addr]bool{}
	for i, remotes := range m.remotes {
		want := append([]netip.Addr{localPod(i)}, remotes...)
		slices.SortFunc(want, netip.Addr.Compare)
		wantVIPs[clusterIP(i)] = true
		if got, ok := have[clusterIP(i)]; !ok {
			problems = append(problems, svcName(i)+" has no load balancer")
		} else if !slices.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("%s backends %v, want %v", svcName(i), got, want))
		}
	}
	for vip := range have {
		if !wantVIPs[vip] && vip != apiServerVIP {
			problems = append(problems, fmt.Sprintf("load balancer %s belongs to no service", vip))
		}
	}
	wantVIPs[apiServerVIP] = true
	if leaks := leakedEndpoints(st, wantVIPs); len(leaks) > 0 {
		problems = append(problems, fmt.Sprintf("%d remote endpoints no load balancer uses, e.g. %s", len(leaks), leaks[0]))
	}
	if len(problems) > 3 {
		problems = append(problems[:3], fmt.Sprintf("and %d more", len(problems)-3))
	}
	return strings.Join(problems, "; ")
}

// apiServerVIP is the envtest apiserver's own kubernetes Service, which the agent programs too.
var apiServerVIP = netip.MustParseAddr("10.0.0.1")

// leakedEndpoints are remote endpoints that no load balancer uses and that hold no current
// ClusterIP (the overlay's service-VIP endpoints are wanted for every ClusterIP).
func leakedEndpoints(st sim.State, clusterIPs map[netip.Addr]bool) []string {
	used := map[string]bool{}
	for _, lb := range st.LoadBalancers {
		for _, id := range lb.BackendEndpointIDs {
			used[strings.ToUpper(id)] = true
		}
	}
	var out []string
	for _, ep := range st.Endpoints {
		if !ep.Remote || used[strings.ToUpper(ep.ID)] || len(ep.IPs) == 0 || clusterIPs[ep.IPs[0]] {
			continue
		}
		out = append(out, ep.IPs[0].String())
	}
	return out
}

func keyOf(o client.Object) client.ObjectKey { return client.ObjectKeyFromObject(o) }
