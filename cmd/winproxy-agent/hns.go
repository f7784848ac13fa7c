package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/winproxy/winproxy/agent/hnsdump"
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
	)
	cmd := &cobra.Command{
		Use:   "dump",
		Short: "Print the host's HNS load balancers and endpoints, like hnsdiag list loadbalancers",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := context.Background()
			h, err := hf.open()
			if err != nil {
				return err
			}
			defer h.close()
			v, err := h.client.Version(ctx)
			if err != nil {
				return err
			}
			lbs, err := h.client.ListLoadBalancers(ctx)
			if err != nil {
				return err
			}
			networkID := ""
			if network != "" {
				n, err := h.client.GetNetworkByName(ctx, network)
				if err != nil {
					return err
				}
				networkID = n.ID
			}
			eps, err := h.client.ListEndpoints(ctx, networkID)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "HNS %d.%d, Windows build %s: %d load balancers, %d endpoints\n\n", v.Major, v.Minor, h.windowsBuild, len(lbs), len(eps))
			if err := hnsdump.LoadBalancers(out, lbs, eps); err != nil {
				return err
			}
			fmt.Fprintln(out)
			return hnsdump.Endpoints(out, eps)
		},
	}
	hf.register(cmd.Flags())
	cmd.Flags().StringVar(&network, "network", "", "list only the endpoints of this HNS network")
	cmd.SetOut(os.Stdout)
	return cmd
}
