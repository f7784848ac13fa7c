// Command winproxy-agent is winproxy's per-node agent. On a Windows node (a HostProcess DaemonSet
// pod) `winproxy-agent run` programs HNS load balancers and endpoints from the node's
// WindowsProxyNode; on Linux it runs against the HNS simulator. Other subcommands preview a config
// offline (plan), show a host's HNS state (hns dump) and remove what the agent programmed (cleanup).
// Each subcommand lives in its own file.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/winproxy/winproxy/internal/cli"
	"github.com/winproxy/winproxy/internal/migrate"
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
		Version: version.Get().String(),
		// Errors are printed once, by main, without the usage text.
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("winproxy-agent {{.Version}}\n")
	// -v is the log verbosity in every subcommand, as in kube-proxy and kubectl; the version is
	// --version or the version subcommand, without a shorthand.
	logging := cli.AddLoggingFlags(root.PersistentFlags())
	root.Flags().Bool("version", false, "print the version, commit and Go version")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return logging.Apply() }
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(newRunCommand(), newPlanCommand(), newMigrateCommand(), newHNSCommand(), newCleanupCommand(), newVersionCommand())
	return root
}

// flagError answers a kube-proxy flag (the agent replaces kube-proxy, so its flags are what an
// admin tries first) with the WindowsProxyConfig field or agent setting to use instead.
func flagError(_ *cobra.Command, err error) error {
	var unknown *pflag.NotExistError
	if errors.As(err, &unknown) {
		if explained := migrate.UnknownAgentFlagError(unknown.GetSpecifiedName()); explained != nil {
			return explained
		}
	}
	return err
}

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the agent's version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cli.PrintVersion(cmd.OutOrStdout(), "winproxy-agent", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}
