package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/winproxy/winproxy/agent/hns"
)

func newCleanupCommand() *cobra.Command {
	var hf hnsFlags
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete every HNS load balancer and remote endpoint this agent created, and nothing else",
		Long: `cleanup is the explicit way to remove what winproxy programmed on this host, for example after the
node stopped being selected by any WindowsProxyConfig (the agent itself never removes programmed
state on its own). Objects created by anyone else, pods' endpoints included, are never touched.
Stop the agent first.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := context.Background()
			h, ledger, err := hf.openOwned()
			if err != nil {
				return err
			}
			defer h.close()
			owned := hns.NewOwned(h.client, ledger)
			// A load balancer created just before the agent was killed is recorded only as an
			// intent; settle those first so cleanup removes it too.
			listed, err := h.client.ListLoadBalancers(ctx)
			if err != nil {
				return err
			}
			if _, err := owned.AdoptCreated(listed); err != nil {
				return err
			}
			var lbs, eps int
			// Load balancers first: they reference the endpoints.
			for _, id := range ledger.IDs(hns.KindLoadBalancer) {
				if err := owned.DeleteLoadBalancer(ctx, id); err != nil && !hns.IsNotFound(err) {
					return fmt.Errorf("deleting load balancer %s: %w", id, err)
				}
				lbs++
			}
			for _, id := range ledger.IDs(hns.KindEndpoint) {
				if err := owned.DeleteEndpoint(ctx, id); err != nil && !hns.IsNotFound(err) {
					return fmt.Errorf("deleting endpoint %s: %w", id, err)
				}
				eps++
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Deleted %d load balancers and %d endpoints created by winproxy-agent\n", lbs, eps)
			return nil
		},
	}
	hf.register(cmd.Flags())
	return cmd
}
