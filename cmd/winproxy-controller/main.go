// Command winproxy-controller runs the cluster side of winproxy: it resolves every
// WindowsProxyConfig per selected Windows node into a WindowsProxyNode, paces rollouts and reports
// the nodes' state in the config's status.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/spf13/pflag"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers"
	"github.com/winproxy/winproxy/internal/cli"
)

// leaderElectionID names the Lease replicas compete for; it must not change between releases.
const leaderElectionID = "winproxy-controller.winproxy.io"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	var metricsAddr, probeAddr, leaderNamespace, heartbeatNamespace string
	var gracePeriod time.Duration
	var leaderElect, showVersion bool
	var secure secureMetrics
	var check selfTest
	fs := pflag.CommandLine
	fs.StringVar(&metricsAddr, "metrics-bind-address", ":8443", "Address the /metrics endpoint binds to (HTTPS with --metrics-secure); \"0\" disables it.")
	secure.register(fs)
	check.register(fs)
	fs.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz endpoints bind to.")
	fs.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader through a Lease so that only one replica reconciles; on in the Helm chart.")
	fs.StringVar(&leaderNamespace, "leader-election-namespace", "", "Namespace of the leader-election Lease; defaults to the pod's namespace when running in a cluster.")
	fs.StringVar(&heartbeatNamespace, "heartbeat-namespace", cli.DefaultNamespace(), "Namespace of the agents' heartbeat Leases (default $POD_NAMESPACE, else the pod's namespace, else winproxy-system); the agents' --heartbeat-namespace must be the same.")
	fs.DurationVar(&gracePeriod, "node-grace-period", winproxyv1alpha1.DefaultNodeGracePeriodSeconds*time.Second, "How long an agent's heartbeat Lease may go without renewal before its WindowsProxyNode reports AgentAlive=False and its config counts the node as failing (the node lifecycle controller's --node-monitor-grace-period).")
	fs.BoolVar(&showVersion, "version", false, "Print the version, commit and Go version, and exit.")
	logging := cli.AddLoggingFlags(fs)
	// --kubeconfig, registered by controller-runtime's config package on the standard flag set.
	fs.AddGoFlagSet(flag.CommandLine)
	pflag.Parse()
	if showVersion {
		return cli.PrintVersion(os.Stdout, "winproxy-controller", "text")
	}
	if err := logging.Apply(); err != nil {
		return err
	}
	if check.enabled {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return fmt.Errorf("loading the kubeconfig: %w", err)
		}
		return check.run(ctrl.SetupSignalHandler(), cfg, os.Stdout)
	}
	log := ctrl.Log.WithName("setup")
	cli.LogStartup(log, "winproxy-controller", cli.FlagValues(fs))
	cli.RegisterClientMetrics()

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := winproxyv1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   controllers.CacheOptions(heartbeatNamespace),
		Metrics:                 secure.options(metricsAddr),
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        leaderElectionID,
		LeaderElectionNamespace: leaderNamespace,
		// The process exits as soon as the manager stops, so the next leader may start at once.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	r := controllers.NewWindowsProxyConfigReconciler(mgr.GetClient(), mgr.GetEventRecorder("winproxy-controller"))
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up the WindowsProxyConfig controller: %w", err)
	}
	if gracePeriod <= 0 {
		return fmt.Errorf("--node-grace-period must be positive, not %v", gracePeriod)
	}
	if err := controllers.NewHeartbeatReconciler(mgr.GetClient(), mgr.GetAPIReader(), heartbeatNamespace, gracePeriod, clock.RealClock{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the heartbeat controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	// Ready once the caches are synced: before that, a new leader would decide on partial data.
	if err := mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("caches not synced")
		}
		return nil
	}); err != nil {
		return err
	}
	log.Info("Starting winproxy-controller", "leaderElection", leaderElect, "metrics", metricsAddr, "probes", probeAddr, "heartbeatNamespace", heartbeatNamespace, "nodeGracePeriod", gracePeriod)
	return mgr.Start(ctx)
}
