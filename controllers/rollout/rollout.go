// Package rollout decides, from what the WindowsProxyNodes say right now, which nodes get their new
// config in this step. It keeps no memory: the rollout's progress is read back from the objects
// every time, so it survives a controller restart and never trusts an earlier decision.
//
// The semantics are a DaemonSet's rolling update: a node that has no config yet gets it at once; a
// node whose current config is not programmed (it is unavailable anyway) is updated at once; the
// other nodes, those another config still holds and those whose spec was edited by hand included,
// are updated in name order while fewer
// than maxUnavailable nodes are unavailable. Every node that is not programmed on what it has
// counts as unavailable, whether it is being updated, lapsed after programming its config, or
// cannot get the new config at all. A node that reports Degraded for its new config, or misses
// the progress deadline before it first programmed it, stalls the rollout: nobody else is updated
// until it recovers or the config changes again.
//
// A stall waits for the node; a failure (Failures) is what an automatic rollback acts on, and a
// rollback is not undone, so a failure needs the progress deadline to pass: a node that did not
// program its new config within the deadline, or programmed it and then reported Degraded for it
// or went silent (its agent's heartbeat stopped) for a whole deadline. A rollback is a rollout
// whose desired hashes are those of the last good config: Compute paces it the same way.
package rollout

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Node is one selected node as the rollout sees it.
type Node struct {
	// Name is the node's name.
	Name string
	// Desired is the hash of the node's resolved config; empty when resolution failed, which
	// leaves the node out of the rollout.
	Desired string
	// Current is the hash in its WindowsProxyNode's spec; empty when it has none.
	Current string
	// Foreign is true when Current was written by another config that held the node: taking the
	// node over is an update like any other, paced by the budget, even if the hashes match.
	Foreign bool
	// Drifted is true when the WindowsProxyNode's spec no longer matches its hash: someone edited
	// it by hand. Restoring it is an update like any other, even if the hashes match.
	Drifted bool
	// Programmed is true when the agent reports Programmed for Current.
	Programmed bool
	// ProgrammedOnce is true when the agent reported Programmed for Current at some point: the
	// rollout reached the node, so not being Programmed now is a lapse (say, the CNI recreating
	// its network), not a missed progress deadline.
	ProgrammedOnce bool
	// Degraded is true when the agent reports Degraded for Current.
	Degraded bool
	// DegradedSince is when the agent started reporting Degraded for Current, when it does.
	DegradedSince time.Time
	// Silent is true when the node's agent stopped its heartbeat (AgentAlive=False), since
	// SilentSince: nothing programs the node's HNS, whatever its last report said.
	Silent      bool
	SilentSince time.Time
	// UpdatedAt is when Current was written.
	UpdatedAt time.Time
}

// Options are the rollout settings.
type Options struct {
	// MaxUnavailable is the number of nodes that may be unavailable at once, at least 1.
	MaxUnavailable int
	// Paused freezes updates (nodes without a config still get one).
	Paused bool
	// ProgressDeadline is how long a node may take to program a new config.
	ProgressDeadline time.Duration
	// Now is the current time.
	Now time.Time
}

// Stall is a node that stopped the rollout.
type Stall struct {
	// Node is the node's name.
	Node string
	// DeadlineExceeded is true when the node did not report in time; false when it reported
	// Degraded.
	DeadlineExceeded bool
}

// Failure is a node that failed the config it was given.
type Failure struct {
	// Node is the node's name.
	Node string
	// AfterProgramming is true when the node programmed the config and then reported Degraded
	// for it; false when it did not program it within the progress deadline.
	AfterProgramming bool
}

// Plan is the outcome of one step.
type Plan struct {
	// Create lists nodes that get their first config now.
	Create []string
	// Update lists nodes moved to their new config now.
	Update []string
	// Pending lists nodes still waiting for their turn.
	Pending []string
	// InFlight is the number of nodes on their new config that have not programmed it yet,
	// counting Create and Update.
	InFlight int
	// Stalls lists the nodes that stop the rollout, by name.
	Stalls []Stall
	// RequeueAfter is when the next in-flight node's deadline expires; zero when none is pending.
	RequeueAfter time.Duration
}

// Done reports whether every node runs and programmed its desired config.
func (p *Plan) Done() bool { return p.InFlight == 0 && len(p.Pending) == 0 && len(p.Stalls) == 0 }

// MaxUnavailable resolves rollout.maxUnavailable (a count or a percentage of selected, rounded
// up) to a number of nodes, at least 1.
func MaxUnavailable(v *intstr.IntOrString, selected int) int {
	if v == nil {
		return 1
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, selected, true)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// Compute decides this step. nodes may come in any order.
func Compute(nodes []Node, o Options) Plan {
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b Node) int { return cmp.Compare(a.Name, b.Name) })

	var p Plan
	// unavailable counts every node not programmed on what it has, the budget's measure;
	// p.InFlight only those the rollout is moving.
	var unavailable int
	var down, up []string // nodes needing an update: unavailable ones, available ones
	for _, n := range nodes {
		switch {
		case n.Desired == "":
			// Left alone: the caller reports why. Down on its last config, it still uses the budget.
			if n.Current != "" && !n.Programmed {
				unavailable++
			}
		case n.Current == "":
			p.Create = append(p.Create, n.Name)
			unavailable++
			p.InFlight++
		case n.Current == n.Desired && !n.Foreign && !n.Drifted:
			if n.Programmed {
				continue
			}
			unavailable++
			if n.ProgrammedOnce {
				continue
			}
			p.InFlight++
			switch left := n.UpdatedAt.Add(o.ProgressDeadline).Sub(o.Now); {
			case n.Degraded:
				p.Stalls = append(p.Stalls, Stall{Node: n.Name})
			case left <= 0:
				p.Stalls = append(p.Stalls, Stall{Node: n.Name, DeadlineExceeded: true})
			case p.RequeueAfter == 0 || left < p.RequeueAfter:
				p.RequeueAfter = left
			}
		case !n.Programmed:
			down = append(down, n.Name)
			unavailable++
		default:
			up = append(up, n.Name)
		}
	}
	if o.Paused || len(p.Stalls) > 0 {
		p.Pending = slices.Concat(down, up)
		slices.Sort(p.Pending)
		return p
	}
	p.Update = down
	budget := max(o.MaxUnavailable-unavailable, 0)
	take := min(budget, len(up))
	p.Update = append(p.Update, up[:take]...)
	p.Pending = up[take:]
	p.InFlight += len(down) + take
	slices.Sort(p.Update)
	if len(p.Create)+len(p.Update) > 0 && (p.RequeueAfter == 0 || o.ProgressDeadline < p.RequeueAfter) {
		p.RequeueAfter = o.ProgressDeadline
	}
	return p
}

// Failures lists, in name order, the nodes that failed their desired config: those that did not
// program it within the progress deadline of receiving it (Degraded, waiting or silent alike),
// and those that programmed it and then reported Degraded for it, or whose agent's heartbeat
// stopped, for a whole progress deadline.
// It also returns how long until the next node fails if nothing changes, zero when none will.
// Only nodes that run their desired config, as this config wrote it, can fail it. Callers ask only
// while a rollout is under way: once every node programmed a config, it is the last good one and
// there is nothing to roll back to.
func Failures(nodes []Node, o Options) ([]Failure, time.Duration) {
	var out []Failure
	var next time.Duration
	for _, n := range nodes {
		if n.Desired == "" || n.Current != n.Desired || n.Foreign || n.Drifted || n.Programmed {
			continue
		}
		var f Failure
		var since time.Time
		switch {
		case !n.ProgrammedOnce:
			f, since = Failure{Node: n.Name}, n.UpdatedAt
		case n.Degraded, n.Silent:
			f, since = Failure{Node: n.Name, AfterProgramming: true}, n.DegradedSince
			if n.Silent && (!n.Degraded || n.SilentSince.Before(since)) {
				since = n.SilentSince
			}
			if since.Before(n.UpdatedAt) {
				since = n.UpdatedAt
			}
		default:
			// A lapse without Degraded (the network being recreated, say) is not the config's doing.
			continue
		}
		switch left := since.Add(o.ProgressDeadline).Sub(o.Now); {
		case left <= 0:
			out = append(out, f)
		case next == 0 || left < next:
			next = left
		}
	}
	slices.SortFunc(out, func(a, b Failure) int { return cmp.Compare(a.Node, b.Node) })
	return out, next
}
