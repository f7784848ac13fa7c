package main

import (
	"os"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/winproxy/winproxy/agent/daemon"
)

func newRunCommand() *cobra.Command {
	var (
		hf          hnsFlags
		opts        daemon.Options
		kubeconfig  string
		zapOpts     zap.Options
		nodeNameEnv = os.Getenv("NODE_NAME")
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Program this node's HNS from its WindowsProxyNode and report what is in effect",
		Long: `run watches this node's WindowsProxyNode, the Nodes, Services and EndpointSlices, programs HNS
load balancers and remote endpoints with the fewest HNS calls, and writes what is in effect into
the WindowsProxyNode status. It never flushes HNS at start and leaves HNS as it is on exit.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			h, ledger, err := hf.openOwned()
			if err != nil {
				return err
			}
			defer h.close()
			opts.HNS, opts.Ledger, opts.WindowsBuild, opts.HostMAC = h.client, ledger, h.windowsBuild, h.hostMAC
			return daemon.Run(ctrl.SetupSignalHandler(), cfg, opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.NodeName, "node-name", nodeNameEnv, "name of this node (default $NODE_NAME, from the downward API)")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster config or $KUBECONFIG)")
	// Ports chosen to stay clear of kube-proxy's 10249 (metrics) and 10256 (healthz), which
	// health-check load balancers forward to.
	fs.StringVar(&opts.MetricsAddr, "metrics-bind-address", ":10265", "address of /metrics; 0 disables it")
	fs.StringVar(&opts.HealthAddr, "health-probe-bind-address", ":10266", "address of /healthz and /readyz (ready after the first successful sync); 0 disables it")
	hf.register(fs)
	addGoFlags(fs, zapOpts.BindFlags)
	return cmd
}
