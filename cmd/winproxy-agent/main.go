// Command winproxy-agent is winproxy's per-node agent. Each subcommand lives
// in its own file; `plan` previews what the agent would program.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "winproxy-agent",
		Short: "Programs HNS load balancers and endpoints on a Windows node for Kubernetes Services",
		// Errors are printed once, by main, without the usage text.
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newPlanCommand())
	return root
}
