//go:build !windows

// Package demo runs the whole of winproxy on one machine for a first-time user (`make demo`): a
// real etcd and kube-apiserver on loopback, the CRDs, the controller, three simulated Windows nodes
// of different Kubernetes and Windows Server versions (each with an agent process on its own
// simulated HNS host) and a Linux node, sample workloads, and the sample Calico overlay config. It
// shows what winproxy did, then stays up for exploring with kubectl until interrupted.
package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/agent/hnsdump"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/controlplane"
	"github.com/winproxy/winproxy/internal/featuregate"
	"github.com/winproxy/winproxy/internal/fleet"
)

// Options configure a demo run.
type Options struct {
	// Once prints what the demo shows and returns instead of staying up.
	Once bool
	// BinDir holds winproxy-controller and winproxy-agent; empty builds them into the demo's
	// temporary directory.
	BinDir string
	// Out receives what the user reads.
	Out io.Writer
	// Timeout bounds the wait for the config to become Ready.
	Timeout time.Duration
}

// Sample is the WindowsProxyConfig the demo applies.
const Sample = "config/samples/calico-overlay-dsr.yaml"

// sampleName is the name of the config in Sample.
const sampleName = "calico-overlay-dsr"

type run struct {
	opts  Options
	env   *controlplane.Env
	dir   string
	hosts map[string]string
	procs []*fleet.Process
	// controllerMetrics is the controller's metrics address (plain HTTP on loopback).
	controllerMetrics string
}

// Run runs the demo until ctx is done (or, with Once, until it has shown everything). It returns an
// error when the config did not become Ready. Everything it started is stopped and its temporary
// files removed before it returns.
func Run(ctx context.Context, opts Options) (err error) {
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	r := &run{opts: opts, hosts: map[string]string{}}
	defer r.cleanup()
	if r.dir, err = os.MkdirTemp("", "winproxy-demo-"); err != nil {
		return err
	}
	steps := []struct {
		what string
		do   func(context.Context) error
	}{
		{"Starting a local control plane (etcd and kube-apiserver on loopback) with the winproxy CRDs", r.startControlPlane},
		{"Building winproxy-controller and winproxy-agent", r.build},
		{"Creating 3 Windows nodes (Kubernetes 1.32, 1.33, 1.34 on Windows Server 2019, 2022, 2025) and 1 Linux node", r.createNodes},
		{"Creating sample workloads in namespace " + fleet.Namespace + ": ClusterIP, NodePort, LoadBalancer (externalTrafficPolicy: Local), externalIPs, ClientIP affinity, UDP, headless, ExternalName", r.createWorkloads},
		{"Preparing each Windows node's simulated HNS host the way Calico VXLAN would (network \"Calico\", remote subnets, Calico_ep, pod endpoints)", r.seedHosts},
		{"Starting winproxy-controller and one winproxy-agent per Windows node", r.startProcesses},
		{"Applying " + Sample + " (Calico overlay, DSR on, dual-stack requested)", r.applySample},
		{"Waiting for the rollout", r.waitSettled},
	}
	for _, s := range steps {
		r.say("==> %s", s.what)
		if err := s.do(ctx); err != nil {
			return err
		}
	}
	r.show(ctx)
	if err := r.fixRefusedNodes(ctx); err != nil {
		return err
	}
	r.say("")
	r.say("==> Load balancers programmed on each simulated host (as `hnsdiag list loadbalancers` would show them)")
	for _, n := range fleet.Nodes {
		if n.Windows {
			r.showHost(n)
		}
	}
	r.kubectl("get", "wpc,wpn", "-o", "wide")
	r.showMetrics()
	if opts.Once {
		r.say("The config is Ready on every node.")
		return nil
	}
	r.tryThis()
	return r.stayUp(ctx)
}

func (r *run) say(format string, args ...any) { fmt.Fprintf(r.opts.Out, format+"\n", args...) }

func (r *run) startControlPlane(context.Context) error {
	env, err := controlplane.Start()
	if err != nil {
		return err
	}
	r.env = env
	r.say("    kube-apiserver at %s", env.Config.Host)
	return nil
}

func (r *run) build(ctx context.Context) error {
	if r.opts.BinDir != "" {
		return nil
	}
	r.opts.BinDir = filepath.Join(r.dir, "bin")
	return fleet.Build(ctx, r.env.RepoRoot, r.opts.BinDir)
}

func (r *run) createNodes(ctx context.Context) error {
	return fleet.CreateNodes(ctx, r.env.Client, fleet.Nodes)
}

func (r *run) createWorkloads(ctx context.Context) error {
	return fleet.CreateWorkloads(ctx, r.env.Client)
}

func (r *run) seedHosts(ctx context.Context) error {
	for _, n := range fleet.Nodes {
		if !n.Windows {
			continue
		}
		r.hosts[n.Name] = filepath.Join(r.dir, n.Name+".hns.json")
		if err := fleet.SeedHost(r.hosts[n.Name], n, fleet.Nodes); err != nil {
			return err
		}
	}
	return r.syncPods(ctx)
}

// syncPods plays the CNI: each host's pod endpoints follow the EndpointSlices.
func (r *run) syncPods(ctx context.Context) error {
	for _, n := range fleet.Nodes {
		if !n.Windows {
			continue
		}
		if _, _, err := fleet.SyncPods(ctx, r.env.Client, r.hosts[n.Name], n); err != nil {
			return err
		}
	}
	return nil
}

// demoHealthSubnet is the loopback subnet of the demo's health servers (see fleet.Node.LoopbackIP).
const demoHealthSubnet = 2

func (r *run) startProcesses(context.Context) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	r.controllerMetrics = l.Addr().String()
	l.Close()
	// Plain HTTP on loopback, so that a local Prometheus scrapes it without a token; in a cluster
	// the controller serves HTTPS to authorized tokens only.
	c, err := fleet.StartController(r.opts.BinDir, r.env.Kubeconfig, r.dir, "--metrics-bind-address", r.controllerMetrics, "--metrics-secure=false")
	if err != nil {
		return err
	}
	r.procs = append(r.procs, c)
	for _, n := range fleet.Nodes {
		if !n.Windows {
			continue
		}
		a, err := fleet.StartAgent(r.opts.BinDir, r.dir, r.hosts[n.Name], n, fleet.AgentOptions{Kubeconfig: r.env.Kubeconfig, HealthIP: n.LoopbackIP(demoHealthSubnet)})
		if err != nil {
			return err
		}
		r.procs = append(r.procs, a)
	}
	return nil
}

func (r *run) applySample(context.Context) error {
	_, err := r.kubectlErr("apply", "-f", filepath.Join(r.env.RepoRoot, Sample))
	return err
}

// waitSettled waits until every selected node either programmed the current config or was
// refused it (and reported why).
func (r *run) waitSettled(ctx context.Context) error {
	return r.wait(ctx, func(wpc *v1alpha1.WindowsProxyConfig) bool {
		n := wpc.Status.Nodes
		return wpc.Status.ObservedGeneration == wpc.Generation && n.Selected == 3 && n.Programmed+int32(len(wpc.Status.FailingNodes)) >= n.Selected
	})
}

func (r *run) wait(ctx context.Context, done func(*v1alpha1.WindowsProxyConfig) bool) error {
	deadline := time.Now().Add(r.opts.Timeout)
	for {
		wpc := &v1alpha1.WindowsProxyConfig{}
		err := r.env.Client.Get(ctx, client.ObjectKey{Name: sampleName}, wpc)
		if err == nil && done(wpc) {
			return nil
		}
		for _, p := range r.procs {
			if p.Exited() {
				return fmt.Errorf("%s exited:\n%s", p.Name, p.Tail(20))
			}
		}
		if time.Now().After(deadline) {
			r.kubectl("get", "wpc,wpn", "-o", "wide")
			return fmt.Errorf("the config did not settle within %v (last error: %w)", r.opts.Timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// show prints the conditions that matter: DSR, the dual-stack downgrade and refused nodes.
func (r *run) show(ctx context.Context) {
	r.kubectl("get", "wpc,wpn", "-o", "wide")
	r.say("==> What each node reports")
	var list v1alpha1.WindowsProxyNodeList
	_ = r.env.Client.List(ctx, &list)
	for _, wpn := range list.Items {
		for _, t := range []string{v1alpha1.ConditionDSRActive, v1alpha1.ConditionDualStackDowngraded} {
			if c := meta.FindStatusCondition(wpn.Status.Conditions, t); c != nil {
				r.say("    %-9s %-20s %-6s %-22s %s", wpn.Name, t, c.Status, c.Reason, c.Message)
			}
		}
	}
	wpc := &v1alpha1.WindowsProxyConfig{}
	if err := r.env.Client.Get(ctx, client.ObjectKey{Name: sampleName}, wpc); err == nil {
		for _, f := range wpc.Status.FailingNodes {
			r.say("    %-9s refused: %s: %s", f.Name, f.Reason, f.Message)
		}
	}
}

// fixRefusedNodes does what the refusal message says when a node's Kubernetes version needs the
// WinDSR gate explicitly, then waits for Ready.
func (r *run) fixRefusedNodes(ctx context.Context) error {
	wpc := &v1alpha1.WindowsProxyConfig{}
	if err := r.env.Client.Get(ctx, client.ObjectKey{Name: sampleName}, wpc); err != nil {
		return err
	}
	refused := false
	for _, f := range wpc.Status.FailingNodes {
		refused = refused || f.Reason == v1alpha1.ReasonFeatureGateDisabled
	}
	if refused {
		r.say("")
		patch := fmt.Sprintf(`{"spec":{"featureGates":{%q:true}}}`, featuregate.WinDSR)
		r.say("==> Nodes older than Kubernetes 1.33 need %s set explicitly; the others kept their rollout going.", featuregate.WinDSR)
		r.say("    kubectl patch wpc %s --type=merge -p '%s'", sampleName, patch)
		if _, err := r.kubectlErr("patch", "wpc", sampleName, "--type=merge", "-p", patch); err != nil {
			return err
		}
	}
	r.say("==> Waiting for the config to become Ready")
	return r.wait(ctx, func(wpc *v1alpha1.WindowsProxyConfig) bool {
		c := meta.FindStatusCondition(wpc.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == wpc.Generation
	})
}

func (r *run) showHost(n fleet.Node) {
	h, err := fleet.OpenHost(r.hosts[n.Name], n)
	if err != nil {
		r.say("    %s: %v", n.Name, err)
		return
	}
	defer h.Close()
	st, err := h.Snapshot()
	if err != nil {
		r.say("    %s: %v", n.Name, err)
		return
	}
	r.say("")
	r.say("--- %s (Kubernetes %s, Windows Server %s, HNS %d.%d): %d load balancers", n.Name, n.KubeletVersion, st.Profile.WindowsServer, st.Profile.Version.Major, st.Profile.Version.Minor, len(st.LoadBalancers))
	var b bytes.Buffer
	_ = hnsdump.LoadBalancers(&b, st.LoadBalancers, st.Endpoints)
	r.say("%s", strings.TrimRight(b.String(), "\n"))
	r.showProbes(n)
}

// showProbes asks the node's health servers what a cloud load balancer would: the proxy health
// server and the storefront Service's healthCheckNodePort (externalTrafficPolicy: Local).
func (r *run) showProbes(n fleet.Node) {
	ip := n.LoopbackIP(demoHealthSubnet)
	r.say("    health checks, as a cloud load balancer probes this node (on %s, its stand-in address):", ip)
	for _, probe := range []struct{ what, path string }{
		{"proxy health", net.JoinHostPort(ip, strconv.Itoa(v1alpha1.DefaultHealthCheckPort)) + "/healthz"},
		{"storefront (healthCheckNodePort 32000)", net.JoinHostPort(ip, "32000") + "/"},
	} {
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + probe.path)
		if err != nil {
			r.say("    GET %-28s %v", probe.path, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r.say("    GET %-28s %d %s  # %s", probe.path, resp.StatusCode, strings.TrimSpace(string(body)), probe.what)
	}
}

// showMetrics prints every process's metrics address and a scrape config for a local
// Prometheus, with the jobs and node labels the chart's monitors set, so that the chart's alerts
// and dashboard (charts/winproxy/files/dashboards/winproxy.json) work on it as they are.
func (r *run) showMetrics() {
	r.say("")
	r.say("==> Metrics (Prometheus text format, plain HTTP on loopback)")
	r.say("    %-24s http://%s/metrics  %s", "winproxy-controller", r.controllerMetrics, answer("http://"+r.controllerMetrics+"/metrics"))
	var agents []string
	for _, p := range r.procs {
		if p.MetricsURL == "" {
			continue
		}
		node := strings.TrimPrefix(p.Name, "winproxy-agent-")
		host := strings.TrimSuffix(strings.TrimPrefix(p.MetricsURL, "http://"), "/metrics")
		r.say("    %-24s %s  %s (also /configz /flagz /statusz /proxyMode /healthz)", p.Name, p.MetricsURL, answer(p.MetricsURL))
		agents = append(agents, fmt.Sprintf(`{targets: ["%s"], labels: {node: %s}}`, host, node))
	}
	r.say("    Scrape them all with this prometheus.yml (one line):")
	r.say(`    scrape_configs: [{job_name: winproxy-agent, scrape_interval: 5s, static_configs: [%s]}, {job_name: winproxy-controller-metrics, scrape_interval: 5s, static_configs: [{targets: ["%s"]}]}]`,
		strings.Join(agents, ", "), r.controllerMetrics)
}

// answer is what GET u answers: its status, or the error.
func answer(u string) string {
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(u)
	if err != nil {
		return err.Error()
	}
	resp.Body.Close()
	return resp.Status
}

func (r *run) kubectl(args ...string) {
	out, err := r.kubectlErr(args...)
	r.say("$ kubectl %s", strings.Join(args, " "))
	if err != nil {
		r.say("%v", err)
	}
	r.say("%s", strings.TrimRight(out, "\n"))
}

func (r *run) kubectlErr(args ...string) (string, error) {
	path, err := r.env.Kubectl()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(path, append([]string{"--kubeconfig", r.env.Kubeconfig}, args...)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out.String(), nil
}

func (r *run) tryThis() {
	kubectl, _ := r.env.Kubectl()
	host := r.hosts["win-2022"]
	r.say(`
==> winproxy is running. In another terminal:

    export KUBECONFIG=%s
    alias kubectl=%s

    kubectl get wpc,wpn -o wide                  # the fleet at a glance
    kubectl describe wpn win-2019                # what one node reports, and why
    kubectl patch wpc %s --type=merge -p '{"spec":{"dsr":{"enabled":false}}}'
    kubectl get wpn -w                           # ...and watch DSR roll out node by node
    kubectl -n %s delete endpointslice %s   # remove the web pods: their load balancers go
    %s hns dump --hns=sim --hns-sim-state %s

Agent and controller logs are in %s. Press Ctrl-C to stop everything and remove the temporary files.`,
		r.env.Kubeconfig, kubectl, sampleName, fleet.Namespace, fleet.SliceName("web"),
		filepath.Join(r.opts.BinDir, "winproxy-agent"), host, r.dir)
}

// stayUp keeps the simulated CNI following the pods until ctx is done.
func (r *run) stayUp(ctx context.Context) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.say("\n==> Stopping")
			return nil
		case <-t.C:
			if err := r.syncPods(ctx); err != nil && !errors.Is(err, context.Canceled) {
				r.say("simulated CNI: %v", err)
			}
		}
	}
}

func (r *run) cleanup() {
	for _, p := range r.procs {
		p.Stop()
	}
	if r.env != nil {
		r.env.Stop()
	}
	if r.dir != "" {
		_ = os.RemoveAll(r.dir)
	}
}
