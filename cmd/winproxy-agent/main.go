// Command winproxy-agent is winproxy's per-node agent. On a Windows node (a HostProcess DaemonSet
// pod) `winproxy-agent run` programs HNS load balancers and endpoints from the node's
// WindowsProxyNode; on Linux it runs against the HNS simulator. Other subcommands preview a config
// offline (plan), show a host's HNS state (hns dump) and remove what the agent programmed (cleanup).
// Each subcommand lives in its own file.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/winproxy/winproxy/internal/version"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:     "winproxy-agent",
		Short:   "Programs HNS load balancers and endpoints on a Windows node for Kubernetes Services",
		Version: version.Version,
		// Errors are printed once, by main, without the usage text.
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCommand(), newPlanCommand(), newHNSCommand(), newCleanupCommand())
	return root
}
