package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/winproxy/winproxy/agent/hns"
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
			r, err := cleanup(context.Background(), h.client, hns.NewOwned(h.client, ledger))
			if err != nil {
				return err
			}
			r.print(cmd.OutOrStdout())
			return nil
		},
	}
	hf.register(cmd.Flags())
	return cmd
}

// cleanupReport says what cleanup deleted and what it left although the agent may have created it.
type cleanupReport struct {
	lbs, eps int
	// unproven are recorded load balancers that no longer hold what the agent wrote.
	unproven []string
	// inUse are the agent's endpoints that a load balancer left in place still uses.
	inUse []string
}

// cleanup deletes the load balancers and endpoints that prove to be the agent's.
func cleanup(ctx context.Context, c hns.Client, owned *hns.Owned) (cleanupReport, error) {
	var r cleanupReport
	lbs, err := c.ListLoadBalancers(ctx)
	if err != nil {
		return r, err
	}
	// A load balancer created just before the agent was killed is recorded only as an intent:
	// settle those first so that cleanup removes it too.
	if _, err := owned.Settle(lbs); err != nil {
		return r, err
	}
	inUse := map[hns.ID]bool{}
	// Load balancers first: they reference the endpoints.
	for _, lb := range lbs {
		if owned.OwnsLoadBalancer(lb) {
			if err := owned.DeleteLoadBalancer(ctx, lb); err != nil && !hns.IsNotFound(err) {
				return r, fmt.Errorf("deleting load balancer %s: %w", lb.ID, err)
			}
			r.lbs++
			continue
		}
		if owned.Ledger.Has(lb.ID) {
			r.unproven = append(r.unproven, lb.String())
		}
		for _, id := range lb.BackendEndpointIDs {
			inUse[hns.IDOf(id)] = true
		}
	}
	// Every network's: the agent's endpoints stay on a network its config switched away from.
	eps, err := c.ListEndpoints(ctx, "")
	if err != nil {
		return r, err
	}
	for _, ep := range eps {
		switch {
		case !owned.OwnsEndpoint(ep):
		case inUse[hns.IDOf(ep.ID)]:
			r.inUse = append(r.inUse, ep.String())
		default:
			if err := owned.DeleteEndpoint(ctx, ep); err != nil && !hns.IsNotFound(err) {
				return r, fmt.Errorf("deleting endpoint %s: %w", ep.ID, err)
			}
			r.eps++
		}
	}
	return r, nil
}

func (r cleanupReport) print(w io.Writer) {
	fmt.Fprintf(w, "Deleted %d load balancers and %d endpoints created by winproxy-agent\n", r.lbs, r.eps)
	if len(r.unproven) > 0 {
		fmt.Fprintf(w, "Left %d load balancers recorded by winproxy-agent that no longer hold what it wrote (changed by someone else, or recorded by an earlier version and not re-proven by a sync since); remove them by hand if they are not in use:\n", len(r.unproven))
		for _, lb := range r.unproven {
			fmt.Fprintf(w, "  %s\n", lb)
		}
	}
	if len(r.inUse) > 0 {
		fmt.Fprintf(w, "Left %d winproxy-agent endpoints that load balancers left in place still use:\n", len(r.inUse))
		for _, ep := range r.inUse {
			fmt.Fprintf(w, "  %s\n", ep)
		}
	}
}
