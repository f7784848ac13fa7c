package apply

import (
	"context"

	"github.com/winproxy/winproxy/agent/engine"
)

// FullSync is a sync of the agent's that lists HNS (agent/daemon program, when it observes):
// Observe, the engine's result for the view it read, Apply. desired stands for the engine: SetNode
// and Desired on an engine.Incremental, as the agent's, or engine.Compute where a test wants the
// pure function. An error of Observe (HNS not answering) ends the sync before anything is computed
// or applied, as the agent skips it.
//
// It is for this package's tests and, exported from a test file, for its benchmarks: the agent
// composes these steps itself, around the lighter syncs it runs between lists.
func FullSync(ctx context.Context, a *Applier, network, mac string, desired func(engine.HNSView) *engine.Desired) (Result, error) {
	o, err := a.Observe(ctx, network, mac)
	if err != nil {
		return Result{}, err
	}
	return a.Apply(ctx, o, desired(o.View))
}
