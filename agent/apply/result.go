package apply

import (
	"fmt"
	"net/netip"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/ownership"
)

// Write is a kind of HNS write, for counters.
type Write string

const (
	WriteLBCreate Write = "lb-create"
	WriteLBModify Write = "lb-modify"
	WriteLBDelete Write = "lb-delete"
	WriteEPCreate Write = "ep-create"
	WriteEPDelete Write = "ep-delete"
)

// writeOf is the counter of an HNS write operation.
var writeOf = map[hns.Op]Write{
	hns.OpCreateLoadBalancer: WriteLBCreate,
	hns.OpModifyLoadBalancer: WriteLBModify,
	hns.OpDeleteLoadBalancer: WriteLBDelete,
	hns.OpCreateEndpoint:     WriteEPCreate,
	hns.OpDeleteEndpoint:     WriteEPDelete,
}

// Reasons a sync applied nothing.
const (
	SkippedBlocked   = "Blocked" // the Desired is not programmable; see its Effective.Blocked
	SkippedSourceVIP = "SourceVIPEndpointFailed"
)

// Failure is one object that could not be programmed this sync.
type Failure struct {
	Object string
	Err    error
	// Deferred is true when no call was made because the object's retry is
	// not due yet.
	Deferred bool
}

// Result says what a sync did, for status and metrics.
type Result struct {
	// Skipped is set when the sync applied nothing (HNS left as it was).
	Skipped         string
	LBsDesired      int
	LBsProgrammed   int
	LBsFailed       int
	RemoteEndpoints int
	// Writes counts the HNS writes made, whether HNS carried them out or not.
	Writes map[Write]int
	// Calls are those writes in the order they were made, each with the
	// rule that asked for it, when the applier was made with RecordCalls.
	Calls []Call
	// DriftRepairs counts objects found deleted behind the agent's back and
	// recreated, by kind.
	DriftRepairs DriftRepairs
	// Adopted counts LBs taken over without a call: unrecorded ones proven
	// the agent's by a create intent (a kill came between create and ledger
	// write), and ones identical to a desired LB that did not prove to be
	// the agent's (the ledger lost or lacking them, a previous proxy's).
	Adopted int
	// Disowned lists recorded LBs that no longer prove to be the agent's
	// (changed behind its back, or recorded without fingerprint by an
	// earlier version and identical to nothing desired): left alone.
	Disowned []string
	// ForeignReplaced lists the frontends of foreign LBs deleted because
	// they blocked a create (docs/design/dataplane.md#foreign-load-balancers).
	ForeignReplaced []string
	Failures        []Failure
	// LBFailures are the load-balancer writes that failed this sync, as
	// winkernel counts them in its failure metrics.
	LBFailures []LBFailure
	// Ledger is how far the ownership ledger's journal keeps up, after the
	// sync: a full disk leaves changes in memory, which the next syncs
	// write once it has room. HNS is programmed either way.
	Ledger ownership.LedgerStatus
}

// LBFailure is a load-balancer write that HNS refused, counted as winkernel
// counts them (kubeproxy_sync_proxy_rules_winkernel_lb_*_failures_total): a
// create or a modify that failed, or a delete that left the load balancer in
// HNS. A modify HNS does not implement is not one (the applier deletes and
// creates instead, as winkernel does), nor a delete of a load balancer that
// is gone already, nor a create whose frontend was freed and made again.
type LBFailure struct {
	// Op is OpCreateLoadBalancer, OpModifyLoadBalancer or OpDeleteLoadBalancer.
	Op hns.Op
	// Key is the load balancer's. A delete of one that no desired load
	// balancer maps to in this process (recorded by an earlier one) has
	// only the Family, read from the load balancer, and no Kind.
	Key engine.LBKey
	Err error
}

// Call is one HNS write of a sync and why it was made.
type Call struct {
	Op     hns.Op
	Reason Reason
	// The object: a load balancer by key (the desired one) or by ID, an
	// endpoint by address or by ID.
	Key engine.LBKey
	IP  netip.Addr
	ID  string
	Err error
}

// String names the call's object, as failures do.
func (c Call) String() string {
	switch {
	case c.Key != (engine.LBKey{}):
		return fmt.Sprintf("%s load balancer %s (%s)", c.Op, c.Key, c.Reason)
	case c.IP.IsValid():
		return fmt.Sprintf("%s endpoint %s (%s)", c.Op, c.IP, c.Reason)
	}
	return fmt.Sprintf("%s %s (%s)", c.Op, c.ID, c.Reason)
}

// DriftRepairs counts objects restored after they went missing, by kind:
// an endpoint's repair also re-points the LBs using it, which are not
// counted again.
type DriftRepairs struct {
	LoadBalancers, Endpoints int
}

// Total is the number of objects restored.
func (d DriftRepairs) Total() int { return d.LoadBalancers + d.Endpoints }

// WriteCount is the total number of HNS writes.
func (r Result) WriteCount() int {
	n := 0
	for _, c := range r.Writes {
		n += c
	}
	return n
}
