package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/winproxy/winproxy/agent/apply"
	"github.com/winproxy/winproxy/agent/daemon"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/cli"
)

// gcPercent is the agent's garbage-collector target unless GOGC is set: Go's default (100) lets
// the heap grow to twice what is live between collections, and the agent keeps every Service's
// load balancers and remote endpoints, so most of its RSS was that headroom. Once synced it
// allocates little per event, so collecting at a quarter more than is live costs almost no CPU:
// at 10k Services (BenchmarkAgent, docs/performance.md) RSS went from 340 to 243 MiB.
const gcPercent = 25

// maxProcs is how many threads run the agent's Go code at once unless GOMAXPROCS is set. Its work
// is one sync at a time, and each is a chain of hand-offs (the watch, the informer, the sync loop,
// then one HNS call after another, each answered by another process); with more threads, Go's
// scheduler wakes an idle one at every hand-off to look for work, and it spins before it sleeps
// again. At 10k Services (BenchmarkAgent, docs/performance.md) one thread took a start's first sync
// from 19 to 12 s of CPU (and 28 to 21 s of wall time) and an event's from 2.0 to 1.7 ms.
const maxProcs = 1

func newRunCommand() *cobra.Command {
	var (
		hf          hnsFlags
		opts        daemon.Options
		kubeconfig  string
		qps         float32
		burst       int
		apiWait     time.Duration
		nodeNameEnv = os.Getenv("NODE_NAME")
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Program this node's HNS from its WindowsProxyNode and report what is in effect",
		Long: `run watches this node's WindowsProxyNode, the Nodes, Services and EndpointSlices, programs HNS
load balancers and remote endpoints with the fewest HNS calls, and writes what is in effect into
the WindowsProxyNode status. It never flushes HNS at start and leaves HNS as it is on exit.

Like kube-proxy it answers load balancers' health checks: /healthz and /livez on
--healthz-bind-address (port spec.healthCheck.port, ` + strconv.Itoa(v1alpha1.DefaultHealthCheckPort) + ` by default) and one service health server
per healthCheckNodePort; and it skips the Services kube-proxy skips (headless, and those labelled
service.kubernetes.io/service-proxy-name).`,
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cli.DefaultGCPercent(gcPercent)
		cli.DefaultMaxProcs(maxProcs)
		opts.Debug.Flags = cli.FlagValues(cmd.Flags(), cmd.InheritedFlags())
		cli.LogStartup(ctrl.Log.WithName("setup"), "winproxy-agent", opts.Debug.Flags)
		cli.RegisterClientMetrics()
		if ns, name, ok := strings.Cut(opts.ClusterDNSService, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("--cluster-dns-service %q: want namespace/name, e.g. %s", opts.ClusterDNSService, apply.DefaultClusterDNS)
		}
		h, ledger, err := hf.openOwned()
		if errors.Is(err, errNoLedger) {
			reportNoLedger(kubeconfig, opts.NodeName, err)
		}
		if err != nil {
			return err
		}
		defer h.close()
		api, err := restConfig(kubeconfig)
		if err != nil {
			return err
		}
		ctx := ctrl.SetupSignalHandler()
		if err := checkReachable(ctx, api, h.client.ListLoadBalancers, apiWait); err != nil {
			return err
		}
		api.config.QPS, api.config.Burst = qps, burst
		opts.HNS, opts.Ledger, opts.WindowsBuild, opts.HostMAC = h.client, ledger, h.windowsBuild, h.hostMAC
		return daemon.Run(ctx, api.config, opts)
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.NodeName, "node-name", nodeNameEnv, "name of this node (default $NODE_NAME, from the downward API)")
	fs.StringVar(&opts.NodeName, "hostname-override", nodeNameEnv, "kube-proxy's name for --node-name")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else the in-cluster service account with KUBERNETES_SERVICE_HOST/PORT)")
	fs.Float32Var(&qps, "kube-api-qps", 5, "queries per second to the API server, as kube-proxy's flag")
	fs.IntVar(&burst, "kube-api-burst", 10, "burst of queries to the API server, as kube-proxy's flag")
	fs.DurationVar(&apiWait, "api-server-wait", 10*time.Second, "with in-cluster settings, how long to try reaching the API server before failing with what to set instead")
	// Metrics and the agent's own probes answer on the node's loopback only, as kube-proxy's
	// metrics do (127.0.0.1:10249); the ports stay clear of kube-proxy's 10249 and 10256.
	fs.StringVar(&opts.MetricsAddr, "metrics-bind-address", "127.0.0.1:10265", "address of /metrics (0.0.0.0:10265 to let Prometheus scrape it from outside the node); 0 disables it")
	fs.StringVar(&opts.HealthAddr, "health-probe-bind-address", "127.0.0.1:10266", "address of the agent's own /healthz (fails when the sync loop is stuck) and /readyz (ready after the first successful sync), for the kubelet; 0 disables it")
	fs.StringVar(&opts.HealthzBindAddress, "healthz-bind-address", "0.0.0.0", "IP (or IP:port) of the proxy health server (/healthz, /livez) that load balancers probe, as kube-proxy's flag; "+
		"without a port it listens on the config's spec.healthCheck.port ("+strconv.Itoa(v1alpha1.DefaultHealthCheckPort)+"), which health-check load balancers forward to; service health servers listen on the same IP; empty disables both")
	fs.DurationVar(&opts.HeartbeatInterval, "heartbeat-interval", v1alpha1.DefaultHeartbeatIntervalSeconds*time.Second, "how often to renew this node's heartbeat Lease while the sync loop is healthy; the controller reports the node's agent lost when the Lease is older than its --node-grace-period")
	fs.StringVar(&opts.HeartbeatNamespace, "heartbeat-namespace", cli.DefaultNamespace(), "namespace of the heartbeat Leases (default $POD_NAMESPACE, else the pod's namespace, else winproxy-system); the controller's --heartbeat-namespace must be the same")
	fs.BoolVar(&opts.Debug.Profiling, "profiling", false, "serve Go's pprof under /debug/pprof/ and the log verbosity under /debug/flags/v on the metrics address, as kube-proxy's flag")
	fs.DurationVar(&opts.HNSCallTimeout, "hns-call-timeout", time.Minute, "give up waiting for an HNS call after this long and report it (a call into a wedged HNS cannot be cancelled); 0 waits forever")
	fs.StringVar(&opts.ClusterDNSService, "cluster-dns-service", apply.DefaultClusterDNS, "namespace/name of the cluster's DNS Service, whose ClusterIP the kubelets' clusterDNS names: "+
		"the first sync after a start programs it first, then default/kubernetes, then the Services with pods on this node")
	hf.register(fs)
	return cmd
}
