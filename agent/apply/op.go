package apply

import (
	"net/netip"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
)

// Reason is the rule of the applier that asks for an operation. The values
// are public (winproxy-agent plan prints them): do not change them.
type Reason string

// The applier's rules (docs/design/dataplane.md#the-applier).
const (
	// ReasonDuplicateOfLocal: a remote endpoint of the agent's holds an
	// address a local endpoint has (Windows Server 2019/2022 answer for both).
	ReasonDuplicateOfLocal Reason = "DuplicateOfLocalEndpoint"
	// ReasonSourceVIPMissing: the overlay source-VIP endpoint does not exist.
	ReasonSourceVIPMissing Reason = "SourceVIPEndpointMissing"
	// ReasonSourceVIPStale: a source-VIP endpoint of the agent's holds an
	// address that is no longer the source VIP, and no load balancer uses it.
	ReasonSourceVIPStale Reason = "SourceVIPEndpointStale"
	// ReasonEndpointMissing: no endpoint holds a wanted remote address.
	ReasonEndpointMissing Reason = "EndpointMissing"
	// ReasonEndpointStale: the agent's endpoint for a wanted address has
	// another MAC or provider address; endpoints cannot be modified.
	ReasonEndpointStale Reason = "EndpointStale"
	// ReasonEndpointUnused: no wanted address and no load balancer in HNS
	// uses one of the agent's remote endpoints.
	ReasonEndpointUnused Reason = "EndpointUnused"
	// ReasonLBMissing: no load balancer in HNS is a wanted one's.
	ReasonLBMissing Reason = "LoadBalancerMissing"
	// ReasonLBChanged: the wanted load balancer's differs from the agent's
	// in HNS: modified, or deleted and created where HNS cannot modify it
	// or the service opted out.
	ReasonLBChanged Reason = "LoadBalancerChanged"
	// ReasonModifyNotCarriedOut: HNS accepted the last modify of this load
	// balancer without carrying it out (HNS 15.4, k/k #131466): from now on
	// load balancers are deleted and created.
	ReasonModifyNotCarriedOut Reason = "ModifyNotCarriedOut"
	// ReasonLBChangedBehindBack: a recorded load balancer no longer has the
	// content the agent wrote: it is given up and the wanted one created.
	ReasonLBChangedBehindBack Reason = "LoadBalancerChangedBehindBack"
	// ReasonLBUnwanted: no wanted load balancer maps to one of the agent's.
	ReasonLBUnwanted Reason = "LoadBalancerUnwanted"
	// ReasonLBNotOwned: a recorded load balancer that is wanted by nothing
	// does not prove to be the agent's: it is not deleted; a sync gives it
	// up, winproxy-agent cleanup leaves and lists it.
	ReasonLBNotOwned Reason = "LoadBalancerNotOwned"
	// ReasonFrontendTaken: HNS refused a create because exactly one load
	// balancer holds its frontend; that one is deleted, even a foreign one,
	// and the create made again (docs/design/dataplane.md#foreign-load-balancers).
	ReasonFrontendTaken Reason = "FrontendTaken"
	// ReasonRetryNotDue: the object failed recently; its retry waits.
	ReasonRetryNotDue Reason = "RetryNotDue"
	// ReasonNoBackendEndpoint: none of the load balancer's backends has an
	// endpoint (their creation failed): what HNS holds is left alone.
	ReasonNoBackendEndpoint Reason = "NoBackendEndpoint"
	// ReasonProgrammed: the load balancer is as wanted; a retry it had
	// waiting is dropped.
	ReasonProgrammed Reason = "Programmed"
	// ReasonRemovalRequested: winproxy-agent cleanup removes what proves to
	// be the agent's.
	ReasonRemovalRequested Reason = "RemovalRequested"
	// ReasonEndpointInUse: winproxy-agent cleanup leaves an endpoint of the
	// agent's that a load balancer it leaves still uses, and lists it.
	ReasonEndpointInUse Reason = "EndpointInUse"
)

// opKind is what an operation does. Most are one HNS write; replace is a
// delete and a create, and a few make no call at all.
type opKind uint8

const (
	opCreateEndpoint  opKind = iota + 1
	opReplaceEndpoint        // delete the listed endpoint, create the wanted one
	opDeleteEndpoint
	opCreateLB // disowning the mapped one first for ReasonLBChangedBehindBack
	opModifyLB
	opReplaceLB // delete the mapped one, create the wanted one
	opDeleteLB
	opDisown   // a ledger write, no HNS call
	opDefer    // no call: the object's retry is not due
	opFail     // no call: the object cannot be programmed
	opSettled  // no call: the object is as wanted
	opUnbindEP // no call: forget a foreign endpoint no longer wanted
	opLeave    // no call: winproxy-agent cleanup leaves the object and lists it
)

var opNames = [...]string{opCreateEndpoint: "CreateEndpoint", opReplaceEndpoint: "ReplaceEndpoint",
	opDeleteEndpoint: "DeleteEndpoint", opCreateLB: "CreateLoadBalancer", opModifyLB: "ModifyLoadBalancer",
	opReplaceLB: "ReplaceLoadBalancer", opDeleteLB: "DeleteLoadBalancer", opDisown: "Disown", opDefer: "Defer",
	opFail: "Fail", opSettled: "Settled", opUnbindEP: "Unbind", opLeave: "Leave"}

func (k opKind) String() string { return opNames[k] }

// String is the op as the planner's tests and a debugger show it.
func (o *op) String() string {
	s := o.kind.String() + " " + o.object() + " " + string(o.reason)
	if o.gate {
		s += " (gate)"
	}
	return s
}

// op is one step of a plan: what to do to which object, and why. The
// planner fills in what the executor needs and nothing is looked up again,
// except the IDs of endpoints created earlier in the same sync.
type op struct {
	kind   opKind
	reason Reason
	// gate makes the op's failure end the sync's writes (the source VIP:
	// no load balancer is programmed without it).
	gate bool

	// Endpoints: a create (or replace) makes the endpoint of ip with mac
	// and provider address pa, remote unless it is the source VIP's; ep is
	// the listed one a delete or replace removes. ip also names the wanted
	// address a delete is for, where there is one.
	ip     netip.Addr
	mac    string
	pa     netip.Addr
	remote bool
	ep     *hns.Endpoint

	// Load balancers: lb is the wanted one and want its HNS form; cur is
	// the one HNS holds (modify, replace, delete, disown).
	lb   *engine.LoadBalancer
	want *hns.LoadBalancer
	cur  *hns.LoadBalancer
}

// object names what the op is about, in failures and events.
func (o *op) object() string {
	switch {
	case o.lb != nil:
		return "load balancer " + o.lb.Key.String()
	case o.kind == opDeleteLB || o.kind == opDisown || o.kind == opLeave && o.cur != nil:
		return "load balancer " + o.cur.ID
	case o.gate:
		return "source-VIP endpoint " + o.ip.String()
	case o.reason == ReasonSourceVIPStale:
		return "source-VIP endpoint " + o.ep.ID
	case o.ip.IsValid():
		return "endpoint " + o.ip.String()
	}
	return "endpoint " + o.ep.ID
}

// retryKey is the object whose retry the op's outcome sets, clears or (a
// deferral) waits for: creates and updates back off, deletes are tried
// again on the next sync.
func (o *op) retryKey() (retryKey, bool) {
	switch {
	case o.kind == opFail, o.kind == opDeleteLB:
		return retryKey{}, false
	case o.lb != nil:
		return lbRetryKey(o.lb.Key), true
	case o.kind == opCreateEndpoint, o.kind == opReplaceEndpoint, o.kind == opDefer:
		return epRetryKey(o.ip), true
	}
	return retryKey{}, false
}
