package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/winproxy/winproxy/agent/plan"
)

func newPlanCommand() *cobra.Command {
	var file, output string
	cmd := &cobra.Command{
		Use:   "plan -f FILE [-o table|json]",
		Short: "Preview the HNS objects and status of a node, offline",
		Long: `plan reads a file describing one Windows node — its resolved config (a WindowsProxyNode,
or a WindowsProxyConfig plus the node's name), Nodes, Services, EndpointSlices and its HNS host —
and prints the HNS load balancers and endpoints the agent would program and the status it would
report. Nothing is read from a cluster and no HNS is touched. See docs/plan.md for the format.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("-o %q: must be table or json", output)
			}
			data, err := readInput(cmd.InOrStdin(), file)
			if err != nil {
				return err
			}
			f, err := plan.Parse(data)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			p, err := plan.Build(f)
			if err != nil {
				return fmt.Errorf("%s:\n%w", file, err)
			}
			if output == "json" {
				return p.WriteJSON(cmd.OutOrStdout())
			}
			return p.WriteTable(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "plan file, YAML or JSON (- for standard input)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func readInput(stdin io.Reader, file string) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(file)
}
