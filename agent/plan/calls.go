package plan

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/winproxy/winproxy/agent/apply"
	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/agent/hnsdump"
	"github.com/winproxy/winproxy/agent/ownership"
)

// Call is one HNS write the agent would make against the dumped host.
type Call struct {
	// Operation is the HNS call: CreateLoadBalancer, ModifyLoadBalancer, DeleteLoadBalancer,
	// CreateEndpoint or DeleteEndpoint.
	Operation string `json:"operation"`
	// ID and Owner are those of the object modified or deleted.
	ID    string `json:"id,omitempty"`
	Owner string `json:"owner,omitempty"`
	// Object is what is created, what a modify writes, or what a deleted object holds.
	Object string `json:"object"`
	// Reason is the applier's rule that makes the call (apply.Reason), e.g. LoadBalancerChanged.
	Reason string `json:"reason,omitempty"`
	// Error is the simulated HNS's answer when it would refuse the call.
	Error string `json:"error,omitempty"`
}

// HostObject is a load balancer or endpoint of the dumped host and what the agent would do to it.
type HostObject struct {
	ID     string `json:"id"`
	Owner  string `json:"owner"`
	Object string `json:"object"`
	// Outcome is kept (winproxy's, unchanged), adopted (foreign, identical to one the agent
	// wants: recorded as winproxy's without a call), modified, deleted, or left alone (foreign).
	Outcome string `json:"outcome"`
}

// Outcomes of a host object.
const (
	OutcomeKept      = "kept"
	OutcomeAdopted   = "adopted"
	OutcomeModified  = "modified"
	OutcomeDeleted   = "deleted"
	OutcomeLeftAlone = "left alone"
)

// hostRun is what the agent's applier did on the dumped host.
type hostRun struct {
	calls    []Call
	lbs, eps []HostObject
	// desired is what the engine computed from the host as the applier observed it, result what
	// the applier reported: a sync's facts for the status.
	desired *engine.Desired
	result  apply.Result
}

// against runs the agent's applier once, as a newly started agent, against a simulated host
// holding what the dump holds, with the dump's winproxy load balancers in its ledger: the calls
// it makes are the ones the agent would make on that host.
func against(d *hnsdump.Dump, networkName, hostMAC string, in engine.Input) (*hostRun, error) {
	v, err := d.Version()
	if err != nil {
		return nil, err
	}
	st := sim.State{Profile: simProfile(v, d.Host.WindowsBuild), Networks: d.Networks}
	owners := map[hns.ID]string{}
	for _, lb := range d.LoadBalancers {
		st.LoadBalancers = append(st.LoadBalancers, lb.LoadBalancer)
		owners[hns.IDOf(lb.ID)] = lb.Owner
	}
	for _, ep := range d.Endpoints {
		st.Endpoints = append(st.Endpoints, ep.Endpoint)
		owners[hns.IDOf(ep.ID)] = ep.Owner
	}
	host := sim.MustNew(sim.WithState(st))
	ledger, err := ownership.OpenLedger("")
	if err != nil {
		return nil, err
	}
	owned := ownership.NewOwned(host, ledger)
	for _, lb := range d.LoadBalancers {
		if lb.Owner == hnsdump.OwnerWinproxy {
			if err := owned.Adopt(lb.LoadBalancer); err != nil {
				return nil, err
			}
		}
	}

	ctx := context.Background()
	rec := &recorder{Client: host, owners: owners, before: d, eps: endpointsByID(d.Endpoints)}
	a := apply.New(rec, ledger, apply.RecordCalls())
	o, err := a.Observe(ctx, networkName, hostMAC)
	if err != nil {
		return nil, err
	}
	in.HNS = o.View
	run := &hostRun{desired: engine.Compute(in)}
	if run.result, err = a.Apply(ctx, o, run.desired); err != nil {
		return nil, err
	}

	run.calls = withReasons(rec.calls, run.result.Calls)
	done := rec.outcomes()
	run.lbs = make([]HostObject, 0, len(d.LoadBalancers))
	for _, lb := range d.LoadBalancers {
		outcome := outcomeOf(done, lb.ID, lb.Owner)
		if outcome == OutcomeLeftAlone && ledger.Has(lb.ID) {
			outcome = OutcomeAdopted
		}
		run.lbs = append(run.lbs, HostObject{ID: lb.ID, Owner: lb.Owner, Object: describeLB(lb.LoadBalancer, rec.eps), Outcome: outcome})
	}
	run.eps = make([]HostObject, 0, len(d.Endpoints))
	for _, ep := range d.Endpoints {
		run.eps = append(run.eps, HostObject{ID: ep.ID, Owner: ep.Owner, Object: describeEndpoint(ep.Endpoint), Outcome: outcomeOf(done, ep.ID, ep.Owner)})
	}
	return run, nil
}

// withReasons gives each recorded call the reason the applier made it for: the applier reports
// its writes in the order it made them, which is the order they reached the recorder.
func withReasons(recorded []Call, made []apply.Call) []Call {
	if len(recorded) != len(made) {
		return recorded // not the same calls: leave the reasons out rather than guess
	}
	for i := range recorded {
		if recorded[i].Operation == string(made[i].Op) {
			recorded[i].Reason = string(made[i].Reason)
		}
	}
	return recorded
}

// simProfile is the simulator profile of the dumped host: the built-in one of its Windows build
// (for that release's quirks), or of the newest release its HNS version reaches, with the dump's
// HNS version.
func simProfile(v hns.Version, build string) sim.Profile {
	profiles := sim.Profiles()
	p := profiles[0]
	for _, c := range profiles {
		if strconv.Itoa(c.Build) == build {
			p = c
			break
		}
		if v.AtLeast(c.Version) {
			p = c
		}
	}
	p.Version = v
	return p
}

// recorder passes HNS calls through and records the writes.
type recorder struct {
	hns.Client
	owners map[hns.ID]string // as dumped
	before *hnsdump.Dump
	calls  []Call
	// eps are the host's endpoints by ID, as dumped and as created since, to name backends by
	// IP: listing the host for every call, or scanning it for every backend, made a plan against
	// a dump of 200k load balancers quadratic.
	eps map[hns.ID]hns.Endpoint
}

func endpointsByID(eps []hnsdump.Endpoint) map[hns.ID]hns.Endpoint {
	out := make(map[hns.ID]hns.Endpoint, len(eps))
	for _, ep := range eps {
		out[hns.IDOf(ep.ID)] = ep.Endpoint
	}
	return out
}

func (r *recorder) record(op hns.Op, id, object string, err error) {
	c := Call{Operation: string(op), ID: id, Owner: r.owners[hns.IDOf(id)], Object: object}
	if err != nil {
		c.Error = err.Error()
	}
	r.calls = append(r.calls, c)
}

// outcomes is what the recorded calls did, by object: the last call that HNS carried out on it.
func (r *recorder) outcomes() map[hns.ID]string {
	out := map[hns.ID]string{}
	for _, c := range r.calls {
		if c.Error != "" || c.ID == "" {
			continue
		}
		switch hns.Op(c.Operation) {
		case hns.OpDeleteEndpoint, hns.OpDeleteLoadBalancer:
			out[hns.IDOf(c.ID)] = OutcomeDeleted
		default:
			out[hns.IDOf(c.ID)] = OutcomeModified
		}
	}
	return out
}

// outcomeOf is what became of the dumped object id of owner.
func outcomeOf(done map[hns.ID]string, id, owner string) string {
	if o, ok := done[hns.IDOf(id)]; ok {
		return o
	}
	if owner == hnsdump.OwnerWinproxy {
		return OutcomeKept
	}
	return OutcomeLeftAlone
}

func (r *recorder) CreateEndpoint(ctx context.Context, networkID string, ep hns.Endpoint) (hns.Endpoint, error) {
	out, err := r.Client.CreateEndpoint(ctx, networkID, ep)
	if err == nil {
		r.eps[hns.IDOf(out.ID)] = out
	}
	r.record(hns.OpCreateEndpoint, "", describeEndpoint(ep), err)
	return out, err
}

func (r *recorder) DeleteEndpoint(ctx context.Context, id string) error {
	object := ""
	if ep, ok := r.eps[hns.IDOf(id)]; ok {
		object = describeEndpoint(ep)
	}
	err := r.Client.DeleteEndpoint(ctx, id)
	r.record(hns.OpDeleteEndpoint, id, object, err)
	return err
}

func (r *recorder) CreateLoadBalancer(ctx context.Context, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	out, err := r.Client.CreateLoadBalancer(ctx, lb)
	r.record(hns.OpCreateLoadBalancer, "", describeLB(lb, r.eps), err)
	return out, err
}

func (r *recorder) ModifyLoadBalancer(ctx context.Context, id string, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	out, err := r.Client.ModifyLoadBalancer(ctx, id, lb)
	r.record(hns.OpModifyLoadBalancer, id, describeLB(lb, r.eps), err)
	return out, err
}

func (r *recorder) DeleteLoadBalancer(ctx context.Context, id string) error {
	object := ""
	if cur, err := r.GetLoadBalancer(ctx, id); err == nil {
		object = describeLB(cur, r.eps)
	}
	err := r.Client.DeleteLoadBalancer(ctx, id)
	r.record(hns.OpDeleteLoadBalancer, id, object, err)
	return err
}

// describeLB renders a load balancer for people: frontend, flags, source VIP and backends by IP
// (an ID no endpoint has keeps its ID with a '?').
func describeLB(lb hns.LoadBalancer, eps map[hns.ID]hns.Endpoint) string {
	s := lb.Frontend().String()
	if f := hnsdump.PortFlags(lb.PortMapping.Flags); f != "-" {
		s += " " + f
	}
	if lb.IsDSR() {
		s += " DSR"
	}
	if lb.PortMapping.DistributionType == hns.DistributionSourceIP {
		s += " ClientIP"
	}
	if lb.SourceVIP.IsValid() {
		s += " source-vip " + lb.SourceVIP.String()
	}
	backends := make([]string, 0, len(lb.BackendEndpointIDs))
	for _, id := range lb.BackendEndpointIDs {
		switch ep, ok := eps[hns.IDOf(id)]; {
		case ok && len(ep.IPs) > 0:
			backends = append(backends, ep.IPs[0].String())
		default:
			backends = append(backends, id+"?")
		}
	}
	slices.Sort(backends)
	return s + " backends " + orDash(strings.Join(backends, ","))
}

// describeEndpoint renders an endpoint for people: kind, name, IPs, MAC and provider address.
func describeEndpoint(ep hns.Endpoint) string {
	kind := "local"
	if ep.Remote {
		kind = "remote"
	}
	ips := make([]string, len(ep.IPs))
	for i, ip := range ep.IPs {
		ips[i] = ip.String()
	}
	s := fmt.Sprintf("%s %s %s", kind, orDash(ep.Name), orDash(strings.Join(ips, ",")))
	if ep.MAC != "" {
		s += " mac " + ep.MAC
	}
	if ep.ProviderAddress.IsValid() {
		s += " pa " + ep.ProviderAddress.String()
	}
	return s
}

func orDash(s string) string { return or(s, "-") }
