package apply

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/agent/syncmode"
	"github.com/winproxy/winproxy/internal/testbuild"
)

// deltaHost is a host whose engine is incremental and whose syncs run as
// the agent's do (agent/daemon program): a sync a change triggered programs
// engine.Changes from the model, and falls back to a full Apply from Recall,
// or from a list when there is nothing to recall.
type deltaHost struct {
	*host
	inc *engine.Incremental
	ctx context.Context
	// deltas counts the event syncs that ApplyChanges did alone.
	deltas int
}

func newDeltaHost(t *testing.T, p sim.Profile, overlay bool) *deltaHost {
	t.Helper()
	return &deltaHost{host: newHost(t, p, overlay, false), inc: engine.NewIncremental(), ctx: context.Background()}
}

// feed gives the engine the named services and slices as they are now,
// deleting those gone.
func (h *deltaHost) feed(names ...string) {
	for _, name := range names {
		if svc, ok := h.svcs[name]; ok {
			h.inc.SetService(svc)
		} else {
			h.inc.DeleteService("ns", name)
		}
		if s, ok := h.slices[name]; ok {
			h.inc.SetEndpointSlice(s)
		} else {
			h.inc.DeleteEndpointSlice("ns", name+"-x")
		}
	}
}

func (h *deltaHost) feedAll() {
	var names []string
	for name := range h.svcs {
		names = append(names, name)
	}
	h.feed(names...)
}

// listed runs a full sync from a list, as the agent's periodic one.
func (h *deltaHost) listed() (Result, error) {
	h.t.Helper()
	return FullSync(h.ctx, h.app, netName, hostMAC, func(v engine.HNSView) *engine.Desired {
		h.inc.SetNode(nodeName, h.cfg, nil, v)
		return h.inc.Desired()
	})
}

// settle runs full syncs until one leaves HNS as wanted and the engine's
// node context as it was (the first creates the source-VIP endpoint, a
// change of the node for the next).
func (h *deltaHost) settle() {
	h.t.Helper()
	for range 4 {
		r, err := h.listed()
		if err != nil {
			h.t.Fatalf("full sync: %v", err)
		}
		if h.app.settled && !h.inc.Changes().Everything {
			return
		}
		if len(r.Failures) > 0 {
			h.clk.Step(10 * time.Second)
		}
	}
	h.t.Fatal("HNS not settled after 4 full syncs")
}

// event is a sync a change triggered, as the agent's (Sync.Run, HNS checked
// this period so that no ID check runs): done says whether it programmed
// only what changed (ApplyChanges).
func (h *deltaHost) event() (r Result, done bool, err error) {
	h.t.Helper()
	return h.eventAfter(false)
}

// eventAfter is event, after a change of the Nodes when nodesChanged.
func (h *deltaHost) eventAfter(nodesChanged bool) (r Result, done bool, err error) {
	h.t.Helper()
	s := &Sync{Applier: h.app, Network: netName, HostMAC: hostMAC, LastChecked: h.clk.Now(), LastListed: h.clk.Now(), NodesChanged: nodesChanged,
		Compute: func(v engine.HNSView) (*engine.Desired, engine.Changes) {
			h.inc.SetNode(nodeName, h.cfg, nil, v)
			return h.inc.Desired(), h.inc.Changes()
		}}
	out := s.Run(h.ctx, h.clk.Now(), time.Minute)
	if out.ReadErr != nil {
		return Result{}, false, out.ReadErr
	}
	done = out.Decision.Step == syncmode.Changes
	if done && out.Err == nil {
		h.deltas++
	}
	return out.Result, done, out.Err
}

// converged fails unless the model is what HNS lists and a full sync from
// a list, with the engine's pure function, has nothing to write: HNS is as
// wanted, nothing of the agent's is left over.
func (h *deltaHost) converged(step string) Result {
	h.t.Helper()
	if _, ok := h.app.Recall(h.ctx, netName, hostMAC); ok {
		h.sameAsListed()
	}
	o, err := h.app.Observe(h.ctx, netName, hostMAC)
	if err != nil {
		h.t.Fatalf("%s: %v", step, err)
	}
	h.sim.Reset()
	full, err := h.app.Apply(h.ctx, o, engine.Compute(h.input(o.View)))
	if c := h.sim.Counts(); err != nil || c.Writes != 0 || len(full.Failures) > 0 {
		h.t.Errorf("%s: the full sync after it wrote %v (%v), failures %v", step, writes(c), err, full.Failures)
	}
	if n := len(h.ledger.IDs()); n != full.LBsDesired {
		h.t.Errorf("%s: %d load balancers recorded, %d desired", step, n, full.LBsDesired)
	}
	return full
}

// TestModifyAfterDeltasKeepsModifying: a load balancer changed by several event syncs in a
// row, around the agent's periodic full syncs, is modified each time. The
// check for a modify HNS accepted without carrying it out (k/k #131466)
// compares what HNS has with the last modify asked, not with one that a
// later sync's own modify overtook.
func TestModifyAfterDeltasKeepsModifying(t *testing.T) {
	h := newDeltaHost(t, sim.WS2025, true)
	workload(h.host)
	h.feedAll()
	h.settle()
	eps := [][]string{
		{"192.168.2.3@node-2", "192.168.2.4@node-2", "192.168.1.5@node-1"},
		{"192.168.2.3@node-2", "192.168.2.4@node-2"},
		{"192.168.2.3@node-2", "192.168.2.4@node-2", "192.168.1.6@node-1"},
		{"192.168.2.3@node-2"},
	}
	for i, e := range eps {
		h.endpoints("svc2", e...)
		h.feed("svc2")
		h.sim.Reset()
		if _, done, err := h.event(); err != nil || !done {
			t.Fatalf("change %d: ApplyChanges = %v, %v; want it done", i, done, err)
		}
		if c := h.sim.Counts(); c.Calls[sim.OpModifyLoadBalancer] != 1 || c.Calls[sim.OpCreateLoadBalancer] != 0 {
			t.Errorf("change %d: writes %v, want the load balancer modified", i, writes(c))
		}
		if i == 0 {
			// The periodic full sync, between two event syncs.
			if _, err := h.listed(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if h.app.noModify {
		t.Error("modify given up on an HNS that carries it out")
	}
	h.converged("after the changes")
}

// carriedOut is an HNS that carries out the next write of op and answers
// it with a timeout (the agent's HNS call timeout struck first).
type carriedOut struct {
	*sim.Sim
	op sim.Op
}

func (c *carriedOut) timedOut(op sim.Op, err error) error {
	if err != nil || c.op != op {
		return err
	}
	c.op = ""
	return hns.ErrTimeout
}

func (c *carriedOut) CreateEndpoint(ctx context.Context, networkID string, ep hns.Endpoint) (hns.Endpoint, error) {
	got, err := c.Sim.CreateEndpoint(ctx, networkID, ep)
	return got, c.timedOut(sim.OpCreateEndpoint, err)
}

func (c *carriedOut) DeleteEndpoint(ctx context.Context, id string) error {
	return c.timedOut(sim.OpDeleteEndpoint, c.Sim.DeleteEndpoint(ctx, id))
}

func (c *carriedOut) CreateLoadBalancer(ctx context.Context, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	got, err := c.Sim.CreateLoadBalancer(ctx, lb)
	return got, c.timedOut(sim.OpCreateLoadBalancer, err)
}

func (c *carriedOut) ModifyLoadBalancer(ctx context.Context, id string, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	got, err := c.Sim.ModifyLoadBalancer(ctx, id, lb)
	return got, c.timedOut(sim.OpModifyLoadBalancer, err)
}

func (c *carriedOut) DeleteLoadBalancer(ctx context.Context, id string) error {
	return c.timedOut(sim.OpDeleteLoadBalancer, c.Sim.DeleteLoadBalancer(ctx, id))
}

// A sync a change of Services or EndpointSlices triggered reads nothing of
// HNS, the network included; it reads the network again when the Nodes
// changed (the CNI follows them with routes) or when a backend in another
// node's pod CIDR has no route in the network as last read, and then
// programs the backend through the route the CNI added.
func TestEventSyncReadsTheNetworkWhenRoutesMayChange(t *testing.T) {
	h := newDeltaHost(t, sim.WS2022, true)
	workload(h.host)
	h.feedAll()
	h.inc.SetClusterNode(testbuild.Node("node-3", testbuild.PodCIDRs("192.168.3.0/24")))
	h.settle()
	reads := func(step string, want int) {
		t.Helper()
		if got := h.sim.Counts().Calls[sim.OpGetNetworkByName]; got != want || h.sim.Counts().Reads != want {
			t.Errorf("%s: %d reads of the network (%v), want %d", step, got, h.sim.Counts().Calls, want)
		}
	}
	routes := []hns.RemoteSubnetRoute{{DestinationPrefix: netip.MustParsePrefix("192.168.2.0/24"), ProviderAddress: ip("10.0.0.3")},
		{DestinationPrefix: netip.MustParsePrefix("192.168.3.0/24"), ProviderAddress: ip("10.0.0.4")}}
	if err := h.sim.SetRemoteSubnetRoutes(netName, routes); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name         string
		nodesChanged bool
		endpoints    []string
		reads        int
	}{
		{"an endpoint moves: the network as last read", false, []string{"192.168.2.3@node-2"}, 0},
		{"the Nodes changed", true, []string{"192.168.2.3@node-2", "192.168.2.4@node-2"}, 1},
		{"a backend on the new node's route", false, []string{"192.168.2.3@node-2", "192.168.3.7@node-3"}, 0},
	} {
		if step.name == "a backend on the new node's route" {
			// The CNI adds the route after the sync the Node's change triggered.
			routes = append(routes, hns.RemoteSubnetRoute{DestinationPrefix: netip.MustParsePrefix("192.168.4.0/24"), ProviderAddress: ip("10.0.0.5")})
			if err := h.sim.SetRemoteSubnetRoutes(netName, routes); err != nil {
				t.Fatal(err)
			}
			h.inc.SetClusterNode(testbuild.Node("node-4", testbuild.PodCIDRs("192.168.4.0/24")))
			step.endpoints, step.reads = []string{"192.168.2.3@node-2", "192.168.4.7@node-4"}, 1
		}
		h.endpoints("svc2", step.endpoints...)
		h.feed("svc2")
		h.sim.Reset()
		if _, _, err := h.eventAfter(step.nodesChanged); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		reads(step.name, step.reads)
		h.converged(step.name)
	}
	st, err := h.sim.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(st.Endpoints, func(ep hns.Endpoint) bool { return ep.HasIP(ip("192.168.4.7")) }); i < 0 || st.Endpoints[i].ProviderAddress != ip("10.0.0.5") {
		t.Errorf("the backend on node-4 is not programmed through its route: %v", st.Endpoints)
	}
}

// A remote endpoint whose create failed but that a later list finds (the
// create was carried out after all, or another holds the address) is
// used, and its backoff ends with it: otherwise the stale retry keeps every
// later sync off ApplyChanges for as long as the endpoint is wanted.
func TestResolvedEndpointEndsItsRetry(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(h *deltaHost)
	}{
		{"create carried out despite a timeout", func(h *deltaHost) {
			h.app = New(&carriedOut{Sim: h.sim, op: sim.OpCreateEndpoint}, h.ledger, WithClock(h.clk))
		}},
		{"a foreign endpoint holds the address", func(h *deltaHost) {
			n, err := h.sim.GetNetworkByName(h.ctx, netName)
			if err != nil {
				h.t.Fatal(err)
			}
			if _, err := h.sim.CreateEndpoint(h.ctx, n.ID, hns.Endpoint{Name: "kube-proxy-left-it", IPs: []netip.Addr{ip("192.168.2.9")},
				MAC: "02-11-C0-A8-02-09", Remote: true, ProviderAddress: ip("10.0.0.3")}); err != nil {
				h.t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newDeltaHost(t, sim.WS2022, true)
			workload(h.host)
			h.feedAll()
			h.settle()
			tc.setup(h)
			h.settle()
			h.endpoints("svc2", "192.168.2.3@node-2", "192.168.2.4@node-2", "192.168.2.9@node-2")
			h.feed("svc2")
			if _, done, err := h.event(); err != nil || done {
				t.Fatalf("ApplyChanges = %v, %v; want a fall-back to a full sync", done, err)
			}
			h.converged("after the failed create")
			if len(h.app.retries) != 0 {
				t.Errorf("retries %v kept for an endpoint in use", h.app.retries)
			}
			h.endpoints("svc2", "192.168.2.3@node-2", "192.168.2.9@node-2")
			h.feed("svc2")
			if _, done, err := h.event(); err != nil || !done {
				t.Errorf("next change: ApplyChanges = %v, %v; want it done", done, err)
			}
			h.converged("after the next change")
		})
	}
}

// step applies a change to the services, feeds it to the engine and runs
// an event sync, which must succeed and leave HNS as a full sync wants it;
// when ApplyChanges did it alone, its counts must be a full sync's. It
// reports whether ApplyChanges did it alone.
func (h *deltaHost) step(name string, change func(), svcs ...string) bool {
	h.t.Helper()
	change()
	h.feed(svcs...)
	h.sim.Reset()
	r, done, err := h.event()
	if err != nil || len(r.Failures) > 0 {
		h.t.Fatalf("%s: event sync: %v, failures %v", name, err, r.Failures)
	}
	if done && h.sim.Counts().Reads != 0 {
		h.t.Errorf("%s: ApplyChanges read %v, want nothing", name, h.sim.Counts().Calls)
	}
	full := h.converged(name)
	if done && (r.RemoteEndpoints != full.RemoteEndpoints || r.LBsProgrammed != full.LBsProgrammed || r.LBsDesired != full.LBsDesired) {
		h.t.Errorf("%s: ApplyChanges counted %d remote endpoints, %d of %d load balancers; a full sync %d, %d of %d", name,
			r.RemoteEndpoints, r.LBsProgrammed, r.LBsDesired, full.RemoteEndpoints, full.LBsProgrammed, full.LBsDesired)
	}
	// converged's full sync is from the pure engine; the incremental one
	// catches up with the list it made.
	h.inc.SetNode(nodeName, h.cfg, nil, mustObserve(h).View)
	h.inc.Desired()
	return done
}

func mustObserve(h *deltaHost) *Observation {
	h.t.Helper()
	o, err := h.app.Observe(h.ctx, netName, hostMAC)
	if err != nil {
		h.t.Fatal(err)
	}
	return o
}

// A foreign load balancer holding the frontend an event sync must create
// (HNS answers "port exists"): ApplyChanges hands the sync to a full one,
// which replaces the blocker as it always does
// (docs/design/dataplane.md#foreign-load-balancers), whether the model
// knew the blocker (listed before) or not (created since the last list).
func TestApplyChangesMeetsAForeignLoadBalancer(t *testing.T) {
	for _, known := range []bool{true, false} {
		t.Run(map[bool]string{true: "listed", false: "created since the list"}[known], func(t *testing.T) {
			h := newDeltaHost(t, sim.WS2022, true)
			workload(h.host)
			h.feedAll()
			var pod string
			for _, ep := range h.snapshot().Endpoints {
				if ep.HasIP(ip("192.168.1.6")) {
					pod = ep.ID
				}
			}
			addBlocker := func() hns.LoadBalancer {
				b, err := h.sim.AddLoadBalancer(hns.LoadBalancer{FrontendVIPs: []netip.Addr{ip("10.20.30.44")},
					PortMapping: hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 8080, ExternalPort: 80}, BackendEndpointIDs: []string{pod}})
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			var blocker hns.LoadBalancer
			if known {
				blocker = addBlocker()
			}
			h.settle()
			if !known {
				blocker = addBlocker()
			}
			h.service("svc4", "10.20.30.44", 0)
			h.endpoints("svc4", "192.168.1.5@node-1")
			h.feed("svc4")
			v, _ := h.app.LocalView(h.ctx, netName, hostMAC, false)
			h.inc.SetNode(nodeName, h.cfg, nil, v)
			d := h.inc.Desired()
			if _, done, err := h.app.ApplyChanges(h.ctx, d, h.inc.Changes()); done || err != nil {
				t.Fatalf("ApplyChanges = %v, %v; want a fall-back", done, err)
			}
			o, ok := h.app.Recall(h.ctx, netName, hostMAC)
			if !ok {
				o = mustObserve(h)
			}
			r, err := h.app.Apply(h.ctx, o, d)
			if err != nil || len(r.ForeignReplaced) != 1 || len(r.Failures) != 0 {
				t.Fatalf("full sync: %v, foreign replaced %v, failures %v; want the blocker replaced", err, r.ForeignReplaced, r.Failures)
			}
			for _, lb := range h.snapshot().LoadBalancers {
				if lb.ID == blocker.ID {
					t.Errorf("blocker %v left", lb)
				}
			}
			h.converged("after the replacement")
		})
	}
}

// A write that fails in the middle of an event sync: ApplyChanges does
// not report done unless with the error that ended it (HNS not running);
// the model is either forgotten or still what HNS lists; nothing is
// programmed from changes before a full sync settled again; full syncs
// converge, leaving nothing of the agent's behind.
func TestApplyChangesWhenAWriteFails(t *testing.T) {
	addRemote := func(h *deltaHost) []string {
		h.endpoints("svc2", "192.168.2.3@node-2", "192.168.2.4@node-2", "192.168.2.9@node-2")
		return []string{"svc2"}
	}
	removeRemote := func(h *deltaHost) []string {
		h.endpoints("svc2", "192.168.2.3@node-2")
		return []string{"svc2"}
	}
	addServices := func(h *deltaHost) []string {
		h.service("svc4", "10.20.30.44", 30004)
		h.endpoints("svc4", "192.168.1.5@node-1", "192.168.2.7@node-2")
		h.service("svc5", "10.20.30.45", 0)
		h.endpoints("svc5", "192.168.1.6@node-1")
		return []string{"svc4", "svc5"}
	}
	deleteService := func(h *deltaHost) []string {
		delete(h.svcs, "svc1")
		delete(h.slices, "svc1")
		return []string{"svc1"}
	}
	type fault struct {
		op      sim.Op
		err     error
		profile sim.Profile
		what    string
		change  func(h *deltaHost) []string
	}
	// carried stands for a write HNS carried out and answered with a
	// timeout: the model cannot know what HNS holds.
	carried := errors.New("carried out, then timed out")
	var faults []fault
	for _, err := range []error{nil, hns.ErrTimeout, hns.ErrHNSNotRunning, carried} {
		faults = append(faults,
			fault{sim.OpCreateLoadBalancer, err, sim.WS2022, "services added", addServices},
			// After its delete: the service has no load balancer.
			fault{sim.OpCreateLoadBalancer, err, sim.WS2022, "backend added", addRemote},
			fault{sim.OpCreateEndpoint, err, sim.WS2022, "backend added", addRemote},
			fault{sim.OpDeleteEndpoint, err, sim.WS2022, "backend removed", removeRemote},
			fault{sim.OpDeleteLoadBalancer, err, sim.WS2022, "service deleted", deleteService},
			fault{sim.OpDeleteLoadBalancer, err, sim.WS2022, "backend removed", removeRemote},
			fault{sim.OpModifyLoadBalancer, err, sim.WS2025, "backend added", addRemote},
			fault{sim.OpModifyLoadBalancer, err, sim.WS2025, "backend removed", removeRemote},
		)
	}
	for _, f := range faults {
		name := fmt.Sprintf("%s %s %s %v", f.profile.Name, f.what, f.op, f.err)
		t.Run(name, func(t *testing.T) {
			h := newDeltaHost(t, f.profile, true)
			c := &carriedOut{Sim: h.sim}
			h.app = New(c, h.ledger, WithClock(h.clk))
			workload(h.host)
			h.feedAll()
			h.settle()
			h.feed(f.change(h)...)
			v, _ := h.app.LocalView(h.ctx, netName, hostMAC, false)
			h.inc.SetNode(nodeName, h.cfg, nil, v)
			d := h.inc.Desired()
			h.sim.Reset()
			if errors.Is(f.err, carried) {
				c.op = f.op
			} else {
				h.sim.FailOp(f.op, f.err, 1)
			}
			_, done, err := h.app.ApplyChanges(h.ctx, d, h.inc.Changes())
			if h.sim.Counts().Calls[f.op] == 0 || c.op != "" {
				t.Fatalf("the change made no %s", f.op)
			}
			fatal := hns.IsHNSNotRunning(f.err)
			switch {
			case fatal && (!done || !hns.IsHNSNotRunning(err)):
				t.Errorf("ApplyChanges = %v, %v; want done with HNS not running", done, err)
			case !fatal && (done || err != nil):
				t.Errorf("ApplyChanges = %v, %v; want a fall-back", done, err)
			}
			if _, ok := h.app.Recall(h.ctx, netName, hostMAC); ok {
				h.sameAsListed()
			}
			if h.app.Settled() {
				t.Error("the applier says settled before a full sync settled again: the next sync would program from changes")
			}
			// The agent's next syncs: full ones until HNS is as wanted.
			for range 3 {
				h.clk.Step(10 * time.Second)
				if _, _, err := h.event(); err != nil {
					t.Fatalf("next sync: %v", err)
				}
				if h.app.settled {
					break
				}
			}
			if !h.app.settled {
				t.Fatal("not settled after 3 syncs")
			}
			h.converged("after the failure")
			for _, ep := range h.snapshot().Endpoints {
				if hns.HasOwnedName(ep) && ep.Remote {
					if _, ok := d.RemoteEndpoints.Get(ep.IPs[0]); !ok {
						t.Errorf("endpoint %v left", ep)
					}
				}
			}
		})
	}
}

// Changes that touch what several keys or services share, each done by
// an event sync and checked against a full sync (which must write nothing)
// and the list (which must equal the model).
func TestApplyChangesEqualsAFullSync(t *testing.T) {
	for _, p := range []sim.Profile{sim.WS2019, sim.WS2022, sim.WS2025} {
		t.Run(p.Name, func(t *testing.T) {
			h := newDeltaHost(t, p, true)
			// The host's root endpoint, for health-check load balancers.
			if _, err := h.sim.AddLocalEndpoint(netName, "cbr0", ip("192.168.1.1")); err != nil {
				t.Fatal(err)
			}
			h.cfg.HealthCheck.ForwardVIP = true
			workload(h.host)
			h.feedAll()
			h.settle()
			type step struct {
				name   string
				change func()
				svcs   []string
			}
			steps := []step{
				// An address that is a ClusterIP (its service-VIP endpoint)
				// and becomes a backend of another service (a backend's
				// endpoint wins), then only a service VIP again.
				{"service VIP", func() {
					h.service("vip", "10.20.30.50", 0)
					h.endpoints("vip", "192.168.1.5@node-1")
				}, []string{"vip"}},
				{"service VIP becomes a backend", func() {
					h.service("sel", "10.20.30.51", 0)
					h.endpoints("sel", "10.20.30.50@node-2")
				}, []string{"sel"}},
				{"backend's service deleted", func() { delete(h.svcs, "vip"); delete(h.slices, "vip") }, []string{"vip"}},
				{"service back", func() {
					h.service("vip", "10.20.30.50", 0)
					h.endpoints("vip", "192.168.1.5@node-1")
				}, []string{"vip"}},
				{"a backend again only a service VIP", func() { h.endpoints("sel", "192.168.2.3@node-2") }, []string{"sel"}},
				// Load balancers sharing a health-check load balancer (one
				// ingress IP); its content is the first service's by name.
				{"ingress", func() { h.loadBalancer("lb-a", "10.20.30.60", "11.0.0.1", 80) }, []string{"lb-a"}},
				{"ingress sharing the health check", func() { h.loadBalancer("lb-b", "10.20.30.61", "11.0.0.1", 81) }, []string{"lb-b"}},
				{"sharer's setting", func() {
					h.svcs["lb-a"].Annotations = map[string]string{engine.AnnotationPreserveDestination: "true"}
				}, []string{"lb-a"}},
				{"first sharer deleted", func() { delete(h.svcs, "lb-a"); delete(h.slices, "lb-a") }, []string{"lb-a"}},
				{"first sharer back", func() {
					h.loadBalancer("lb-a", "10.20.30.60", "11.0.0.1", 80)
					h.svcs["lb-a"].Annotations = map[string]string{engine.AnnotationPreserveDestination: "true"}
				}, []string{"lb-a"}},
				{"last sharers deleted", func() {
					delete(h.svcs, "lb-a")
					delete(h.slices, "lb-a")
					delete(h.svcs, "lb-b")
					delete(h.slices, "lb-b")
				}, []string{"lb-a", "lb-b"}},
				// Two services claiming one frontend: the winner changes.
				{"external IP", func() { h.externalIP("c-b", "10.20.30.71", "10.9.9.9", 80) }, []string{"c-b"}},
				{"external IP claimed by a winner", func() { h.externalIP("c-a", "10.20.30.70", "10.9.9.9", 80) }, []string{"c-a"}},
				{"winner leaves the frontend", func() { h.svcs["c-a"].Spec.Ports[0].Port = 81 }, []string{"c-a"}},
				{"winner takes it back", func() { h.svcs["c-a"].Spec.Ports[0].Port = 80 }, []string{"c-a"}},
				{"winner deleted", func() { delete(h.svcs, "c-a"); delete(h.slices, "c-a") }, []string{"c-a"}},
				// Per-service settings.
				{"session affinity", func() { h.svcs["svc2"].Spec.SessionAffinity = corev1.ServiceAffinityClientIP }, []string{"svc2"}},
				{"no session affinity", func() { h.svcs["svc2"].Spec.SessionAffinity = corev1.ServiceAffinityNone }, []string{"svc2"}},
				{"externalTrafficPolicy Local (DSR)", func() {
					h.svcs["svc1"].Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
				}, []string{"svc1"}},
				{"externalTrafficPolicy Cluster", func() {
					h.svcs["svc1"].Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
				}, []string{"svc1"}},
				{"node port moved", func() { h.svcs["svc1"].Spec.Ports[0].NodePort = 30011 }, []string{"svc1"}},
				{"target port moved", func() {
					h.svcs["svc3"].Spec.Ports[0].TargetPort = intstr.FromInt32(9090)
					port := int32(9090)
					h.slices["svc3"].Ports[0].Port = &port
				}, []string{"svc3"}},
				{"every backend gone", func() { h.endpoints("svc2") }, []string{"svc2"}},
				{"backends back", func() { h.endpoints("svc2", "192.168.2.3@node-2", "192.168.2.4@node-2") }, []string{"svc2"}},
			}
			deltas := 0
			for _, s := range steps {
				if h.step(s.name, s.change, s.svcs...) {
					deltas++
				}
			}
			if deltas < len(steps)/2 {
				t.Errorf("ApplyChanges did %d of %d changes alone", deltas, len(steps))
			}
			// DSR on ClusterIP load balancers is the node's: a full sync.
			h.cfg.EnableDSR = true
			if h.step("DSR", func() {}) {
				t.Error("a change of the node context was programmed from changes")
			}
		})
	}
}

// loadBalancer adds a LoadBalancer service with an ingress IP and a local
// backend.
func (h *host) loadBalancer(name, cip, ingress string, port int32) {
	h.service(name, cip, 0)
	s := h.svcs[name]
	s.Spec.Type = corev1.ServiceTypeLoadBalancer
	s.Spec.Ports[0].Port = port
	s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ingress}}
	h.endpoints(name, "192.168.1.6@node-1")
}

// externalIP adds a service with an external IP and a remote backend.
func (h *host) externalIP(name, cip, external string, port int32) {
	h.service(name, cip, 0)
	s := h.svcs[name]
	s.Spec.ExternalIPs = []string{external}
	s.Spec.Ports[0].Port = port
	h.endpoints(name, "192.168.2.5@node-2")
}

// The model's lookups by ID after its own writes: a deleted object is not
// found (whatever the case of its ID), a modified one is found as modified,
// one created before or after the deletes are folded in (recall) is found,
// and the fingerprint still matches HNS's IDs.
func TestModelLookupsAfterWrites(t *testing.T) {
	h := newHost(t, sim.WS2025, true, false)
	ctx := context.Background()
	m := h.app.model
	net, err := h.sim.GetNetworkByName(ctx, netName)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.app.Observe(ctx, netName, hostMAC); err != nil {
		t.Fatal(err)
	}
	matches := func(when string) {
		t.Helper()
		epIDs, _ := h.sim.ListEndpointIDs(ctx, net.ID)
		lbIDs, _ := h.sim.ListLoadBalancerIDs(ctx)
		if !m.matches(epIDs, lbIDs) {
			t.Errorf("%s: the model's IDs do not match HNS's", when)
		}
	}
	newEP := func(a string, remote bool) hns.Endpoint {
		t.Helper()
		e := hns.Endpoint{Name: "winproxy-" + a, IPs: []netip.Addr{ip(a)}, Remote: remote}
		if remote {
			// Shaped as the agent shapes them: the model holds it in brief.
			e.ProviderAddress, e.MAC = ip("10.0.0.3"), string(hns.AppendConjuredMAC(nil, ip(a)))
		}
		ep, err := m.CreateEndpoint(ctx, net.ID, e)
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	newLB := func(vip string, backends ...string) hns.LoadBalancer {
		t.Helper()
		lb, err := m.CreateLoadBalancer(ctx, hns.LoadBalancer{FrontendVIPs: []netip.Addr{ip(vip)},
			PortMapping: hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 8080, ExternalPort: 80}, BackendEndpointIDs: backends})
		if err != nil {
			t.Fatal(err)
		}
		return lb
	}
	found := func(id string, want bool, what string) {
		t.Helper()
		if _, got := m.loadBalancer(id); got != want {
			t.Errorf("%s: load balancer %s found %v, want %v", what, id, got, want)
		}
	}
	foundEP := func(ep hns.Endpoint, id string, want bool, what string) {
		t.Helper()
		if _, got := m.endpoint(ep.IPs[0], id); got != want {
			t.Errorf("%s: endpoint %s found %v, want %v", what, id, got, want)
		}
	}
	local, remote := newEP("192.168.1.2", false), newEP("192.168.2.3", true)
	a, b := newLB("10.20.30.41", local.ID), newLB("10.20.30.42", remote.ID)
	found(a.ID, true, "created after the list")
	if m.briefs.len() == 0 {
		t.Fatal("the remote endpoint is not held in brief")
	}
	foundEP(remote, strings.ToLower(remote.ID), true, "lower case")
	foundEP(remote, "00000000-0000-0000-0000-000000000001", false, "another ID at the brief's address")
	foundEP(local, local.ID, true, "created after the list")
	// An IPv6 address is held as its last 32 bits and the place of its first 96; a lookup of an
	// address whose first 96 have no place finds nothing and makes none.
	briefs := m.briefs.len()
	v6 := newEP("fd00:10:244:2::7", true)
	if m.briefs.len() != briefs+1 {
		t.Fatal("the IPv6 remote endpoint is not held in brief")
	}
	foundEP(v6, v6.ID, true, "IPv6, created after the list")
	highs := len(m.briefing.highs)
	if _, ok := m.endpoint(ip("fd00:10:244:99::7"), v6.ID); ok || len(m.briefing.highs) != highs {
		t.Errorf("an address of no brief's first 96 bits: found %v, the table grew from %d to %d places", ok, highs, len(m.briefing.highs))
	}
	_, _, versionBefore, ips, _ := m.localView()
	if ips[local.IPs[0]] != local.ID {
		t.Errorf("the local addresses %v lack the endpoint created after the list", ips)
	}
	// Deleted and modified before the index of IDs is rebuilt.
	if err := m.DeleteLoadBalancer(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	b.BackendEndpointIDs = []string{local.ID, remote.ID}
	if _, err := m.ModifyLoadBalancer(ctx, b.ID, b); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteEndpoint(ctx, strings.ToLower(local.ID)); err != nil {
		t.Fatal(err)
	}
	found(a.ID, false, "deleted")
	foundEP(local, local.ID, false, "deleted by its lower-case ID")
	if got, _ := m.loadBalancer(b.ID); !slices.Equal(got.BackendEndpointIDs, b.BackendEndpointIDs) {
		t.Errorf("modified load balancer looked up as %v", got)
	}
	if _, eps, version, ips, ok := m.localView(); !ok || slices.ContainsFunc(eps, func(ep hns.Endpoint) bool { return ep.ID == local.ID }) ||
		version == versionBefore || ips[local.IPs[0]] != "" {
		t.Errorf("local view %v (version %d, was %d; addresses %v) still has the deleted endpoint", eps, version, versionBefore, ips)
	}
	matches("after deletes and a modify")
	// Fold the deletes in, then write more: the index is rebuilt.
	if _, _, _, ok := m.recall(); !ok {
		t.Fatal("nothing to recall")
	}
	found(a.ID, false, "deleted, after the fold")
	found(b.ID, true, "modified, after the fold")
	c := newLB("10.20.30.43", remote.ID)
	found(c.ID, true, "created after the deletes were folded in")
	if err := m.DeleteLoadBalancer(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	found(c.ID, false, "created and deleted after the fold")
	other := newEP("192.168.2.4", true)
	foundEP(other, other.ID, true, "created after the fold")
	if err := m.DeleteEndpoint(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	foundEP(other, other.ID, false, "created and deleted after the fold")
	matches("after the fold")
	// A delete HNS answers "not found" for: gone all the same, counted once.
	if err := h.sim.RemoveLoadBalancer(b.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteLoadBalancer(ctx, b.ID); !hns.IsNotFound(err) {
		t.Fatalf("delete of a load balancer gone: %v", err)
	}
	found(b.ID, false, "deleted behind the model's back, then by it")
	matches("after a not-found delete")
	h.sameAsListed()
}

// TestModifyAfterARecreate: a load balancer deleted and created again
// (here: its service opted out of modify for a while), by an event sync or
// a full one, has no modify of the old one to check; the next modify is
// carried out as one.
func TestModifyAfterARecreate(t *testing.T) {
	for _, full := range []bool{false, true} {
		t.Run(map[bool]string{false: "recreated by an event sync", true: "recreated by a full sync"}[full], func(t *testing.T) {
			h := newDeltaHost(t, sim.WS2025, true)
			workload(h.host)
			h.feedAll()
			h.settle()
			for i, c := range []struct {
				annotations map[string]string
				endpoints   []string
				want        sim.Op
			}{
				{nil, []string{"192.168.1.6@node-1", "192.168.1.5@node-1"}, sim.OpModifyLoadBalancer},
				{map[string]string{engine.AnnotationWinProxyOptimization: "DISABLED"}, []string{"192.168.1.6@node-1"}, sim.OpCreateLoadBalancer},
				{nil, []string{"192.168.1.6@node-1", "192.168.1.5@node-1"}, sim.OpModifyLoadBalancer},
			} {
				h.svcs["svc3"].Annotations = c.annotations
				h.endpoints("svc3", c.endpoints...)
				h.feed("svc3")
				h.sim.Reset()
				if i == 1 && full {
					if _, err := h.listed(); err != nil {
						t.Fatal(err)
					}
				} else if _, done, err := h.event(); err != nil || !done {
					t.Fatalf("change %d: ApplyChanges = %v, %v; want it done", i, done, err)
				}
				if w := writes(h.sim.Counts()); w[c.want] != 1 || len(w) != map[sim.Op]int{sim.OpModifyLoadBalancer: 1, sim.OpCreateLoadBalancer: 2}[c.want] {
					t.Errorf("change %d: writes %v, want a %s", i, w, c.want)
				}
			}
			if h.app.noModify {
				t.Error("modify given up on an HNS that carries it out")
			}
			h.converged("after the changes")
		})
	}
}

// ApplyChanges works on the full syncs' index, which is emptied after every sync, and lends it
// the model's map of the local addresses: the map must come out of it whole, or the next event
// would not know the node's own endpoints.
func TestApplyChangesKeepsTheModelsLocalAddresses(t *testing.T) {
	h := newDeltaHost(t, sim.WS2025, true)
	if _, err := h.sim.AddLocalEndpoint(netName, "cbr0", ip("192.168.1.1")); err != nil {
		t.Fatal(err)
	}
	workload(h.host)
	h.feedAll()
	h.settle()
	_, _, _, local, _ := h.app.model.localView()
	want := maps.Clone(local)
	if len(want) == 0 {
		t.Fatal("the model knows no local address")
	}
	h.endpoints("svc2", "192.168.2.3@node-2", "192.168.2.9@node-2")
	h.feed("svc2")
	if _, done, err := h.event(); err != nil || !done {
		t.Fatalf("event sync: done by ApplyChanges %v, %v", done, err)
	}
	if _, _, _, got, _ := h.app.model.localView(); !maps.Equal(got, want) {
		t.Errorf("the model's local addresses after an event: %v, want %v", got, want)
	}
}
