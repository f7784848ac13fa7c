package apply

import (
	"context"
	"net/netip"
	"slices"
	"time"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/syncmode"
)

// Sync is a node's sync as the agent runs it, the way agent/syncmode decides: the applier it
// programs through, the engine it computes with, and when HNS was last checked and listed, which
// Run keeps up to date. The agent, the benchmarks and the conformance suite all sync through it.
type Sync struct {
	Applier *Applier
	// Network and HostMAC are the HNS network to program and the host's MAC for overlay endpoints.
	Network, HostMAC string
	// Compute runs the engine on a view of HNS: what it wants, and what changed since its last
	// computation.
	Compute func(engine.HNSView) (*engine.Desired, engine.Changes)
	// LastChecked is when HNS was last listed or found by its IDs to hold what the applier
	// recalls; LastListed when it was last listed.
	LastChecked, LastListed time.Time
	// NodesChanged is set by the caller when a Node's pod CIDRs or addresses changed: the CNI
	// follows them with remote-subnet routes, so the next sync reads the network again. Run
	// clears it once it has.
	NodesChanged bool
}

// Outcome is what one sync did.
type Outcome struct {
	// Decision is the final step and its reason.
	Decision syncmode.Decision
	// Desired is what the engine wanted; nil when HNS could not be read.
	Desired *engine.Desired
	// Result is what the applier programmed.
	Result Result
	// ReadErr is set when HNS could not be read: nothing was programmed.
	ReadErr error
	// Err is set when programming stopped part-way (e.g. HNS went away).
	Err error
}

// Run runs one sync at now with sync period period: it asks syncmode.Decide for each step and
// executes it, until one programs.
func (s *Sync) Run(ctx context.Context, now time.Time, period time.Duration) Outcome {
	f := syncmode.Facts{Period: period, SinceCheck: now.Sub(s.LastChecked), SinceList: now.Sub(s.LastListed), CanRecall: s.Applier.CanRecall(),
		NodesChanged: s.NodesChanged}
	var out Outcome
	var changes engine.Changes
	for {
		d := syncmode.Decide(f)
		out.Decision = d
		switch d.Step {
		case syncmode.CheckIDs:
			same, err := s.Applier.Verify(ctx)
			f.Checked, f.CheckFailed, f.IDsMatch = true, err != nil, same
			if err == nil && same {
				s.LastChecked = now
			}
		case syncmode.Compute, syncmode.ComputeRecalled:
			reread := d.Step == syncmode.Compute
			view, ok := s.Applier.LocalView(ctx, s.Network, s.HostMAC, reread)
			if !ok {
				f.ViewFailed = true
				continue
			}
			if reread {
				f.NetworkRead, s.NodesChanged = true, false
			}
			// A computation again (a missing route) adds its changes to the first's, which the
			// engine's next computation overwrites.
			again, first := f.Computed, clone(changes)
			var more engine.Changes
			out.Desired, more = s.Compute(view)
			changes = more
			if again {
				changes = union(first, more)
			}
			s.computed(&f, out.Desired, changes)
		case syncmode.Changes:
			r, done, err := s.Applier.ApplyChanges(ctx, out.Desired, changes)
			if !done {
				f.ChangesRefused = true
				continue
			}
			out.Result, out.Err = r, err
			return out
		case syncmode.Recall:
			// The network read once a sync is enough: the engine computed with it.
			o, ok := s.Applier.recall(ctx, s.Network, s.HostMAC, !f.NetworkRead)
			if !ok {
				f.RecallFailed = true
				continue
			}
			out.Result, out.Err = s.Applier.Apply(ctx, o, out.Desired)
			return out
		case syncmode.List:
			return s.list(ctx, now, out)
		}
	}
}

// computed records the engine's facts about a computation from the applier's view.
func (s *Sync) computed(f *syncmode.Facts, d *engine.Desired, ch engine.Changes) {
	f.Computed = true
	f.LocalEndpointMissing = d.MissesLocalEndpoint()
	f.Programmable = d.Effective.Programmable
	f.NodeContextChanged = ch.Everything
	f.Changed = len(ch.LoadBalancers)
	f.Settled, f.RetriesPending = s.Applier.Settled(), s.Applier.RetriesPending()
	f.RouteMissing = d.MissesRoute()
}

// clone is ch with slices of its own.
func clone(ch engine.Changes) engine.Changes {
	ch.LoadBalancers, ch.RemoteEndpoints = slices.Clone(ch.LoadBalancers), slices.Clone(ch.RemoteEndpoints)
	return ch
}

// union is what two computations of one sync changed together.
func union(ch, more engine.Changes) engine.Changes {
	out := engine.Changes{Everything: ch.Everything || more.Everything}
	out.LoadBalancers = slices.Concat(ch.LoadBalancers, more.LoadBalancers)
	slices.SortFunc(out.LoadBalancers, engine.LBKey.Compare)
	out.LoadBalancers = slices.Compact(out.LoadBalancers)
	out.RemoteEndpoints = slices.Concat(ch.RemoteEndpoints, more.RemoteEndpoints)
	slices.SortFunc(out.RemoteEndpoints, netip.Addr.Compare)
	out.RemoteEndpoints = slices.Compact(out.RemoteEndpoints)
	return out
}

// list lists HNS, computes from what it shows and programs everything.
func (s *Sync) list(ctx context.Context, now time.Time, out Outcome) Outcome {
	o, err := s.Applier.Observe(ctx, s.Network, s.HostMAC)
	if err != nil {
		out.Desired, out.ReadErr = nil, err
		return out
	}
	s.LastListed, s.LastChecked = now, now
	out.Desired, _ = s.Compute(o.View)
	out.Result, out.Err = s.Applier.Apply(ctx, o, out.Desired)
	return out
}
