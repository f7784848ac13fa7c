// Package syncmode decides how one sync of the agent reads HNS and what it programs: the one place
// that weighs the cost of a sync against what the agent can trust. Listing HNS is the expensive
// read on Windows (every object opened, queried and closed), so a sync lists only when it must; a
// sync a Service or EndpointSlice change triggered usually reads only the network and programs
// only what changed.
//
// A sync gathers facts as it goes (an ID check, the engine's computation, the outcome of a write)
// and asks Decide after each, until Decide names a final step: Changes, Recall or List. Between
// two ID checks a sync reads the network again only when the Nodes changed or a route is missing. Decide is
// pure, and its every row is a case of the table test; apply.Sync executes the steps, for the agent,
// the benchmarks and the conformance suite alike, and the step
// and reason of each sync are labels of winproxy_agent_syncs_total and fields of its debug log.
package syncmode

import "time"

// Step is what a sync does next. CheckIDs and Compute gather facts; Changes, Recall and List end
// the decision.
type Step string

const (
	// CheckIDs enumerates the IDs of HNS's endpoints and load balancers (no object opened) and
	// compares them with what the applier recalls: the cheap drift check, once a period.
	CheckIDs Step = "CheckIDs"
	// Compute runs the engine on the applier's view of HNS (the network read again, the local
	// endpoints recalled), with no list.
	Compute Step = "Compute"
	// ComputeRecalled runs the engine on the applier's view of HNS with the network as last read:
	// a change of Services or EndpointSlices changes no route (the CNI's routes follow the
	// Nodes), so a sync it triggered reads nothing of HNS. Reading the network decodes a route
	// per node of the cluster.
	ComputeRecalled Step = "ComputeRecalled"
	// Changes programs only what the engine's last computation changed, from the applier's model.
	Changes Step = "Changes"
	// Recall programs everything the engine wants, against what the applier recalls of HNS (the last
	// list and its own writes since), with no list.
	Recall Step = "Recall"
	// List lists HNS (the network, its endpoints, the host's load balancers) and programs
	// everything against it.
	List Step = "List"
)

// Reason says why Decide chose a step.
type Reason string

// The reasons, from the first sync to the cheapest.
const (
	// NothingToRecall: the applier has no list to start from (a new process, a failed write whose
	// outcome only a list can tell, the network recreated).
	NothingToRecall Reason = "NothingToRecall"
	// NetworkChanged: the network read again is not the one listed.
	NetworkChanged Reason = "NetworkChanged"
	// FullListDue: FullListEvery periods since the last list; only a list finds an object changed
	// in place.
	FullListDue Reason = "FullListDue"
	// IDCheckDue: no ID check this period yet.
	IDCheckDue Reason = "IDCheckDue"
	// IDCheckFailed: the ID enumeration did not answer.
	IDCheckFailed Reason = "IDCheckFailed"
	// IDsDiffer: objects came or went behind the agent's back (drift, or the CNI's pods).
	IDsDiffer Reason = "IDsDiffer"
	// CheckedThisPeriod: HNS was listed or its IDs checked less than CheckFraction of a period ago.
	CheckedThisPeriod Reason = "CheckedThisPeriod"
	// IDsMatch: the ID check found exactly what the applier recalls.
	IDsMatch Reason = "IDsMatch"
	// NodesChanged: a Node's pod CIDRs or addresses changed since the network was last read; the
	// CNI follows them with remote-subnet routes.
	NodesChanged Reason = "NodesChanged"
	// RouteMissing: a backend in another node's pod CIDR has no route in the network as last
	// read; the CNI may have added it since.
	RouteMissing Reason = "RouteMissing"
	// LocalEndpointMissing: a local pod's endpoint is not in the recalled view; the CNI creates
	// those, and only a list shows a new one.
	LocalEndpointMissing Reason = "LocalEndpointMissing"
	// RecallFailed: the network changed between the view and the recall.
	RecallFailed Reason = "RecallFailed"
	// NotProgrammable: nothing is programmed this sync (network missing, source VIP not ready, ...);
	// the full Apply records why.
	NotProgrammable Reason = "NotProgrammable"
	// LastSyncUnsettled: the last sync left failures or skipped objects, which only a full Apply
	// retries.
	LastSyncUnsettled Reason = "LastSyncUnsettled"
	// RetriesPending: objects wait for their backoff; a full Apply retries those that are due.
	RetriesPending Reason = "RetriesPending"
	// NodeContextChanged: the node's own settings or inputs changed (config, node IP, network,
	// source VIP): every load balancer may change.
	NodeContextChanged Reason = "NodeContextChanged"
	// ChangeTooLarge: more than MaxChanges load balancers changed (a rollout, many Services at
	// once); a full Apply costs no more.
	ChangeTooLarge Reason = "ChangeTooLarge"
	// ChangesRefused: programming the changes met what the model did not know (a write failed, a
	// frontend a foreign load balancer holds, an object gone); what was written is kept.
	ChangesRefused Reason = "ChangesRefused"
)

const (
	// FullListEvery is how many sync periods may pass between two full lists of HNS.
	FullListEvery = 10
	// CheckFraction of a period after a check or list, the next check is due: the periodic sync
	// comes a period after the last sync started, not after the last check, and must not miss the
	// check by a hair.
	CheckFraction = 0.9
	// MaxChanges is the most load balancers a sync programs one by one.
	MaxChanges = 256
)

// Facts are what a sync knows so far. The zero value is a sync that has learned nothing yet.
type Facts struct {
	// Period is the sync period; SinceCheck and SinceList how long ago HNS was last checked by its
	// IDs (or listed) and last listed.
	Period, SinceCheck, SinceList time.Duration
	// CanRecall is true when the applier holds a list to start from.
	CanRecall bool
	// Checked is set once the ID check ran: CheckFailed when it did not answer, else IDsMatch.
	Checked, CheckFailed, IDsMatch bool
	// ViewFailed is set when the applier's view could not be had (the network changed).
	ViewFailed bool
	// NodesChanged: a Node's pod CIDRs or addresses changed since the network was last read.
	// NetworkRead: the network was read again this sync.
	NodesChanged, NetworkRead bool
	// RouteMissing: the engine found a backend in another node's pod CIDR without a route.
	RouteMissing bool
	// Computed is set once the engine ran on the applier's view; the engine's facts follow.
	Computed bool
	// LocalEndpointMissing: the engine found no endpoint for a local pod.
	LocalEndpointMissing bool
	// Programmable is false when the engine programs nothing this sync.
	Programmable bool
	// NodeContextChanged: the engine says every load balancer may have changed.
	NodeContextChanged bool
	// Changed is how many load balancers the engine's computation changed.
	Changed int
	// Settled: the last sync left HNS exactly as wanted. RetriesPending: objects wait for retry.
	Settled, RetriesPending bool
	// ChangesRefused is set when programming the changes stopped on something the model did not
	// know; RecallFailed when the applier could not recall.
	ChangesRefused, RecallFailed bool
}

// Decision is the next step and why.
type Decision struct {
	Step   Step
	Reason Reason
}

// Final reports whether the decision ends the deciding: the sync programs now.
func (d Decision) Final() bool { return d.Step == Changes || d.Step == Recall || d.Step == List }

// Decide is the next step of a sync that knows f.
func Decide(f Facts) Decision {
	if d, ok := view(f); !ok {
		return d
	}
	return program(f)
}

// view decides where the engine's view of HNS comes from; ok once it came from the applier's
// model (Computed) and the sync may go on to decide what to program.
func view(f Facts) (Decision, bool) {
	switch {
	case !f.CanRecall:
		return Decision{List, NothingToRecall}, false
	case f.ViewFailed:
		return Decision{List, NetworkChanged}, false
	case f.Computed && f.RouteMissing && !f.NetworkRead:
		return Decision{Compute, RouteMissing}, false
	case f.Computed:
		return Decision{}, true
	case f.SinceCheck < time.Duration(CheckFraction*float64(f.Period)) && f.NodesChanged:
		return Decision{Compute, NodesChanged}, false
	case f.SinceCheck < time.Duration(CheckFraction*float64(f.Period)):
		return Decision{ComputeRecalled, CheckedThisPeriod}, false
	case f.SinceList >= FullListEvery*f.Period:
		return Decision{List, FullListDue}, false
	case !f.Checked:
		return Decision{CheckIDs, IDCheckDue}, false
	case f.CheckFailed:
		return Decision{List, IDCheckFailed}, false
	case !f.IDsMatch:
		return Decision{List, IDsDiffer}, false
	}
	return Decision{Compute, IDsMatch}, false
}

// program decides what a sync whose engine ran on the applier's view programs, and from what.
func program(f Facts) Decision {
	switch {
	case f.LocalEndpointMissing:
		return Decision{List, LocalEndpointMissing}
	case f.RecallFailed:
		return Decision{List, RecallFailed}
	case f.ChangesRefused:
		return Decision{Recall, ChangesRefused}
	case !f.Programmable:
		return Decision{Recall, NotProgrammable}
	case !f.Settled:
		return Decision{Recall, LastSyncUnsettled}
	case f.RetriesPending:
		return Decision{Recall, RetriesPending}
	case f.NodeContextChanged:
		return Decision{Recall, NodeContextChanged}
	case f.Changed > MaxChanges:
		return Decision{Recall, ChangeTooLarge}
	}
	if f.Checked {
		return Decision{Changes, IDsMatch}
	}
	return Decision{Changes, CheckedThisPeriod}
}
