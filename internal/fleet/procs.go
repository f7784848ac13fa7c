package fleet

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/winproxy/winproxy/agent/hns"
)

// Build compiles winproxy-controller and winproxy-agent from the repository at root into dir, so
// tests and the demo run the real binaries.
func Build(ctx context.Context, root, dir string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator), "./cmd/winproxy-controller", "./cmd/winproxy-agent")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the binaries: %w\n%s", err, out)
	}
	return nil
}

// Process is a winproxy binary running as a child process, its output in a log file.
type Process struct {
	Name string
	// Log is the file holding the process's standard output and error.
	Log string
	// MetricsURL and HealthURL (the agent's /readyz) are set for agents.
	MetricsURL, HealthURL string
	// HealthIP is the address of an agent's proxy and service health servers, the ones load
	// balancers probe.
	HealthIP string

	args []string
	env  []string
	bin  string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartController starts winproxy-controller against the cluster of kubeconfig, without metrics
// and probe endpoints unless args (appended last, so they win) ask for them. It reads the agents'
// heartbeats in SystemNamespace.
func StartController(binDir, kubeconfig, logDir string, args ...string) (*Process, error) {
	p := &Process{
		Name: "winproxy-controller",
		bin:  filepath.Join(binDir, "winproxy-controller"),
		args: append([]string{"--kubeconfig", kubeconfig, "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
			"--heartbeat-namespace", SystemNamespace}, args...),
		Log: filepath.Join(logDir, "winproxy-controller.log"),
	}
	return p, p.Start()
}

// AgentOptions are how a simulated node's agent is started.
type AgentOptions struct {
	// Kubeconfig is passed as --kubeconfig; empty leaves the agent on the in-cluster settings of
	// Env, as in a pod.
	Kubeconfig string
	// HealthIP is the loopback address the node's proxy and service health servers listen on
	// (--healthz-bind-address): every simulated node has its own, as every real node has its own
	// IP, so several agents on one machine can all listen on port 10256.
	HealthIP string
	// SimSocket, when set, is the Unix socket where the test serves the node's simulated host
	// (hnsrpc.Serve), which the agent then calls as it calls HNS on Windows, a service of its own
	// (--hns-sim-socket); hostFile is not opened, and the agent keeps its ledger in hostFile's
	// folder.
	SimSocket string
	// Env is added to the agent's environment; Args to its command line.
	Env, Args []string
}

// StartAgent starts winproxy-agent for node n on its simulated host at hostFile (or served at
// o.SimSocket), with metrics and its own probes on free loopback ports.
func StartAgent(binDir, logDir, hostFile string, n Node, o AgentOptions) (*Process, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	metrics, health := ports[0], ports[1]
	args := []string{
		"run", "--node-name", n.Name,
		"--hns=sim",
		"--metrics-bind-address", metrics, "--health-probe-bind-address", health,
		"--healthz-bind-address", o.HealthIP,
		"--heartbeat-namespace", SystemNamespace,
	}
	if o.SimSocket != "" {
		args = append(args, "--hns-sim-socket", o.SimSocket, "--state-dir", filepath.Dir(hostFile))
	} else {
		args = append(args, "--hns-sim-state", hostFile, "--hns-sim-profile", n.Profile)
	}
	if o.Kubeconfig != "" {
		args = append(args, "--kubeconfig", o.Kubeconfig)
	}
	p := &Process{
		Name:       "winproxy-agent-" + n.Name,
		bin:        filepath.Join(binDir, "winproxy-agent"),
		args:       append(args, o.Args...),
		env:        o.Env,
		Log:        filepath.Join(logDir, "winproxy-agent-"+n.Name+".log"),
		MetricsURL: "http://" + metrics + "/metrics",
		HealthURL:  "http://" + health + "/readyz",
		HealthIP:   o.HealthIP,
	}
	return p, p.Start()
}

// Start starts (or restarts) the process.
func (p *Process) Start() error {
	log, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = procAttr()
	if p.env != nil {
		cmd.Env = append(os.Environ(), p.env...)
	}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("starting %s: %w", p.Name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(p.done)
	}()
	return nil
}

// Stop asks the process to exit (SIGTERM) and waits for it.
func (p *Process) Stop() { p.signal(syscall.SIGTERM) }

// Kill kills the process (SIGKILL) and waits for it, like a node losing power.
func (p *Process) Kill() { p.signal(syscall.SIGKILL) }

func (p *Process) signal(sig syscall.Signal) {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Pid is the process's ID, for reading what it costs the machine (/proc); 0 before Start.
func (p *Process) Pid() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Tail returns the last lines of the process's log, for failure messages.
func (p *Process) Tail(lines int) string {
	data, err := os.ReadFile(p.Log)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// Ready reports whether the agent's /readyz answers 200 (after its first successful sync).
func (p *Process) Ready() bool {
	resp, err := http.Get(p.HealthURL)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// metricsClient reads the agents' /metrics uncompressed: a gzip writer costs the agent a
// megabyte of garbage a read, which the benchmarks that read an agent's counters between its
// events would count as the events'. Prometheus asks for gzip; its scrapes are the agent's
// periodic cost.
var metricsClient = &http.Client{Transport: &http.Transport{DisableCompression: true}}

// Metric sums the samples of a counter or gauge whose labels include all of the given ones
// (name="value" pairs), read from the agent's /metrics.
func (p *Process) Metric(name string, labels ...string) (float64, error) {
	resp, err := metricsClient.Get(p.MetricsURL)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return sumMetric(resp.Body, name, labels...)
}

func sumMetric(r io.Reader, name string, labels ...string) (float64, error) {
	var sum float64
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || strings.HasPrefix(line, "#") {
			continue
		}
		series, value, ok := strings.Cut(line, " ")
		if !ok || (series != name && !strings.HasPrefix(series, name+"{")) {
			continue
		}
		match := true
		for _, l := range labels {
			if !strings.Contains(series, l) {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, fmt.Errorf("metric %s: %w", series, err)
		}
		sum += v
	}
	return sum, sc.Err()
}

// HNSWrites is the number of HNS write calls (creates, modifies, deletes) the agent made.
func (p *Process) HNSWrites() (float64, error) {
	var total float64
	for _, op := range hns.Ops() {
		if !op.IsWrite() {
			continue
		}
		v, err := p.Metric("winproxy_agent_hns_calls_total", `operation="`+op.MetricLabel()+`"`)
		if err != nil {
			return 0, err
		}
		total += v
	}
	return total, nil
}

// Wait waits up to timeout for the process to exit and returns its exit code, or -1 when it is
// still running.
func (p *Process) Wait(timeout time.Duration) int {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		return -1
	}
}

// freePorts returns n loopback addresses with ports that were free a moment ago. The listeners are
// held until all n are picked: closed one by one, the kernel may hand the same port out twice.
func freePorts(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}
