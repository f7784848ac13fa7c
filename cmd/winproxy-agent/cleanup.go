package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/winproxy/winproxy/agent/apply"
	"github.com/winproxy/winproxy/agent/ownership"
)

func newCleanupCommand() *cobra.Command {
	var hf hnsFlags
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete every HNS load balancer and endpoint this agent created, and nothing else",
		Long: `cleanup is the explicit way to remove what winproxy programmed on this host, for example after the
node stopped being selected by any WindowsProxyConfig (the agent itself never removes programmed
state on its own). It deletes only what it can prove the agent's: a load balancer recorded in the
agent's ledger with the content it still holds, an endpoint named winproxy-<IP>. Objects created by
anyone else, pods' endpoints included, are never touched, and neither is a load balancer someone
changed since the agent wrote it, nor an endpoint such a load balancer still uses: those are listed.
Stop the agent first.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, ledger, err := hf.openOwned()
			if err != nil {
				return err
			}
			defer h.close()
			r, err := apply.Remove(context.Background(), h.client, ownership.NewOwned(h.client, ledger))
			if err != nil {
				return err
			}
			printRemoval(cmd.OutOrStdout(), r)
			return nil
		},
	}
	hf.register(cmd.Flags())
	return cmd
}

// printRemoval says what cleanup deleted and what it left although the agent may have created it.
func printRemoval(w io.Writer, r apply.Removal) {
	fmt.Fprintf(w, "Deleted %d load balancers and %d endpoints created by winproxy-agent\n", r.LoadBalancers, r.Endpoints)
	if len(r.Unproven) > 0 {
		fmt.Fprintf(w, "Left %d load balancers recorded by winproxy-agent that no longer hold what it wrote (changed by someone else, or recorded by an earlier version and not re-proven by a sync since); remove them by hand if they are not in use:\n", len(r.Unproven))
		for _, lb := range r.Unproven {
			fmt.Fprintf(w, "  %s\n", lb)
		}
	}
	if len(r.InUse) > 0 {
		fmt.Fprintf(w, "Left %d winproxy-agent endpoints that load balancers left in place still use:\n", len(r.InUse))
		for _, ep := range r.InUse {
			fmt.Fprintf(w, "  %s\n", ep)
		}
	}
}
