package sim

import (
	"errors"
	"maps"
	"math/rand"

	"github.com/winproxy/winproxy/agent/hns"
)

// Op names a Client method, for counters and fault injection: hns.Op, whose
// constants these are.
type Op = hns.Op

const (
	OpVersion             = hns.OpVersion
	OpGetNetworkByName    = hns.OpGetNetworkByName
	OpListEndpoints       = hns.OpListEndpoints
	OpGetEndpointByName   = hns.OpGetEndpointByName
	OpCreateEndpoint      = hns.OpCreateEndpoint
	OpDeleteEndpoint      = hns.OpDeleteEndpoint
	OpListLoadBalancers   = hns.OpListLoadBalancers
	OpGetLoadBalancer     = hns.OpGetLoadBalancer
	OpCreateLoadBalancer  = hns.OpCreateLoadBalancer
	OpModifyLoadBalancer  = hns.OpModifyLoadBalancer
	OpDeleteLoadBalancer  = hns.OpDeleteLoadBalancer
	OpListEndpointIDs     = hns.OpListEndpointIDs
	OpListLoadBalancerIDs = hns.OpListLoadBalancerIDs
)

// hcnFixed is what each operation costs in HCN calls through hcsshim v0.15.0 (hcn/*.go), besides
// the open, query and close of every object a list or a lookup returns (hcnPerObject): a lookup by
// name or ID is an enumeration with a filter; a create opens the network (endpoints), creates,
// queries and closes; a modify opens, modifies, queries and closes; a delete is one call; an ID
// enumeration is one call.
var hcnFixed = map[Op]int{
	OpVersion: 1, OpGetNetworkByName: 1, OpListEndpoints: 1, OpGetEndpointByName: 1,
	OpCreateEndpoint: 5, OpDeleteEndpoint: 1, OpListLoadBalancers: 1, OpGetLoadBalancer: 1,
	OpCreateLoadBalancer: 3, OpModifyLoadBalancer: 4, OpDeleteLoadBalancer: 1,
	OpListEndpointIDs: 1, OpListLoadBalancerIDs: 1,
}

// hcnPerObject is the open, query and close hcsshim makes for every object a list returns.
const hcnPerObject = 3

// Counts is a snapshot of the calls a Sim received (failed ones included:
// on Windows a failed call costs as much as a successful one).
type Counts struct {
	Calls    map[Op]int
	Failed   map[Op]int
	Reads    int
	Writes   int
	Failures int
	// HCN is what the calls would cost on Windows in HCN calls, each a JSON RPC into HNS: a list
	// of N objects is 1 + 3N of them (see hcnFixed).
	HCN int
}

// Total is the number of calls of any kind.
func (c Counts) Total() int { return c.Reads + c.Writes }

func (c *Counts) add(op Op) {
	if c.Calls == nil {
		c.Calls = map[Op]int{}
	}
	c.Calls[op]++
	c.HCN += hcnFixed[op]
	if op.IsWrite() {
		c.Writes++
	} else {
		c.Reads++
	}
}

func (c *Counts) fail(op Op) {
	if c.Failed == nil {
		c.Failed = map[Op]int{}
	}
	c.Failed[op]++
	c.Failures++
}

func (c Counts) clone() Counts {
	c.Calls = maps.Clone(c.Calls)
	c.Failed = maps.Clone(c.Failed)
	if c.Calls == nil {
		c.Calls = map[Op]int{}
	}
	if c.Failed == nil {
		c.Failed = map[Op]int{}
	}
	return c
}

// ErrInjected is the default error of injected faults (code E_FAIL).
var ErrInjected = errors.New("injected fault")

type opFault struct {
	err   error
	times int // remaining; <0 means until cleared
}

type faults struct {
	nth     map[int]error // call number (since injection baseline) -> error
	calls   int           // calls seen, for nth
	ops     map[Op]*opFault
	rate    float64
	rateErr error
	rng     *rand.Rand
}

// check decides whether this call fails; nil means proceed.
func (f *faults) check(op Op) error {
	f.calls++
	if err, ok := f.nth[f.calls]; ok {
		delete(f.nth, f.calls)
		return err
	}
	if of := f.ops[op]; of != nil && of.times != 0 {
		if of.times > 0 {
			of.times--
		}
		return of.err
	}
	if f.rate > 0 && f.rng != nil && f.rng.Float64() < f.rate {
		return f.rateErr
	}
	return nil
}

// codeForKind gives an injected sentinel the code HNS would carry with it,
// so error texts look like real ones.
func codeForKind(err error) hns.Code {
	switch {
	case errors.Is(err, hns.ErrPortExists):
		return hns.CodePortAlreadyExists
	case errors.Is(err, hns.ErrNetworkNotFound):
		return hns.CodeNetworkNotFound
	case errors.Is(err, hns.ErrEndpointNotFound):
		return hns.CodeEndpointNotFound
	case errors.Is(err, hns.ErrNotFound):
		return hns.CodeElementNotFound
	case errors.Is(err, hns.ErrNotImplemented):
		return hns.CodeNotImplemented
	case errors.Is(err, hns.ErrHNSNotRunning):
		return hns.CodeHNSNotRunning
	case errors.Is(err, hns.ErrInvalidIP):
		return hns.CodeInvalidIP
	}
	return 0x80004005 // E_FAIL
}

// injected wraps a fault's error the way the real adapter would present it.
func injected(op Op, id string, err error) error {
	if err == nil {
		err = ErrInjected
	}
	var he *hns.Error
	if errors.As(err, &he) {
		return err
	}
	e := &hns.Error{Op: op, ID: id, Code: codeForKind(err)}
	if k := hns.KindForCode(e.Code, nil); k != nil && errors.Is(err, k) {
		e.Kind = err // a sentinel (possibly a more specific not-found)
	} else {
		e.Err = err
	}
	return e
}
