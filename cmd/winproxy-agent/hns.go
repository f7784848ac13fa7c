package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hnsdump"
	"github.com/winproxy/winproxy/agent/ownership"
	"github.com/winproxy/winproxy/internal/termsafe"
)

func newHNSCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "hns", Short: "Inspect the host's HNS"}
	cmd.AddCommand(newHNSDumpCommand())
	return cmd
}

func newHNSDumpCommand() *cobra.Command {
	var (
		hf      hnsFlags
		network string
		output  string
	)
	cmd := &cobra.Command{
		Use:   "dump [-o table|json|yaml] [--network NAME]",
		Short: "Print the host's HNS load balancers and endpoints with their IDs and owners, like hnsdiag list",
		Long: `dump lists the host's HNS load balancers and endpoints, as hnsdiag list loadbalancers and hnsdiag
list endpoints would, with backends resolved to their IPs and an OWNER column: winproxy for what
proves to be the agent's (an endpoint named winproxy-<IP>, a load balancer recorded in the agent's
ledger with the content it still holds), foreign for everything else (kube-proxy's load balancers,
the CNI's endpoints). The agent modifies and deletes only winproxy's objects, except a foreign load
balancer that holds a frontend it programs, which it replaces as kube-proxy does; cleanup deletes
only winproxy's.

-o json is the input of 'winproxy-agent plan --hns'; give --network with the network the config
names, so that the plan knows it. Reading the ledger changes nothing: dump is safe while the agent
runs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := dump(context.Background(), &hf, network)
			if err != nil {
				return err
			}
			// HNS names are whatever their creator made them: no escape sequence reaches the terminal.
			return hnsdump.Print(termsafe.NewWriter(cmd.OutOrStdout()), d, output)
		},
	}
	hf.register(cmd.Flags())
	cmd.Flags().StringVar(&network, "network", "", "list only the endpoints of this HNS network, and record the network (plan --hns needs it)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: "+strings.Join(hnsdump.Formats, ", "))
	return cmd
}

// dump reads the host's HNS and the agent's ledger, without writing either.
func dump(ctx context.Context, hf *hnsFlags, network string) (*hnsdump.Dump, error) {
	h, err := hf.open()
	if err != nil {
		return nil, err
	}
	defer h.close()
	path, err := hf.ledgerFile()
	if err != nil {
		return nil, err
	}
	ledger, err := ownership.ReadLedger(path)
	if err != nil {
		return nil, err
	}
	v, err := h.client.Version(ctx)
	if err != nil {
		return nil, err
	}
	lbs, err := h.client.ListLoadBalancers(ctx)
	if err != nil {
		return nil, err
	}
	var networks []hns.Network
	networkID := ""
	if network != "" {
		n, err := h.client.GetNetworkByName(ctx, network)
		if err != nil {
			return nil, fmt.Errorf("network %q: %w", network, err)
		}
		networks, networkID = []hns.Network{n}, n.ID
	}
	eps, err := h.client.ListEndpoints(ctx, networkID)
	if err != nil {
		return nil, err
	}
	host := hnsdump.Host{HNSVersion: v.String(), WindowsBuild: h.windowsBuild, Simulated: h.simulated}
	if !h.simulated {
		host.Interfaces = hostInterfaces()
	}
	return hnsdump.New(host, networks, lbs, eps, ownership.NewOwned(h.client, ledger)), nil
}
