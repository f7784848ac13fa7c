package apply

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
)

// The tests of this file are about what the agent may take for its own:
// ledger entries prove nothing without the content they record, lost
// entries are rebuilt from what HNS holds, and the journal stays small.

func (h *host) lbByVIP(vip string) hns.LoadBalancer {
	h.t.Helper()
	for _, lb := range h.snapshot().LoadBalancers {
		if lb.VIP() == ip(vip) {
			return lb
		}
	}
	h.t.Fatalf("no load balancer on %s", vip)
	return hns.LoadBalancer{}
}

func (h *host) hasLB(id string) bool {
	for _, lb := range h.snapshot().LoadBalancers {
		if lb.ID == id {
			return true
		}
	}
	return false
}

func (h *host) localEndpoint(a string) hns.Endpoint {
	h.t.Helper()
	for _, ep := range h.snapshot().Endpoints {
		if !ep.Remote && ep.HasIP(ip(a)) {
			return ep
		}
	}
	h.t.Fatalf("no local endpoint for %s", a)
	return hns.Endpoint{}
}

// stranger adds a load balancer someone else created on vip.
func (h *host) stranger(vip string) hns.LoadBalancer {
	h.t.Helper()
	lb, err := h.sim.AddLoadBalancer(hns.LoadBalancer{FrontendVIPs: []netip.Addr{ip(vip)},
		PortMapping:        hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 80, ExternalPort: 80},
		BackendEndpointIDs: []string{h.localEndpoint("192.168.1.5").ID}})
	if err != nil {
		h.t.Fatal(err)
	}
	return lb
}

func (h *host) ledgerLines() []string {
	h.t.Helper()
	b, err := os.ReadFile(h.ledgerPath)
	if err != nil {
		h.t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func (h *host) deleteService(name string) {
	delete(h.svcs, name)
	delete(h.slices, name)
}

// Adding a stranger's ID to the ledger, bare as earlier versions wrote
// entries or with a made-up fingerprint, gives the agent no right to it:
// the stranger's load balancers stay, and the entries are dropped and
// reported.
func TestForgedLedgerEntryDeletesNothing(t *testing.T) {
	h := newHost(t, sim.WS2022, false, true)
	workload(h)
	bare, madeUp := h.stranger("10.99.0.1"), h.stranger("10.99.0.2")
	h.sync()
	f, err := os.OpenFile(h.ledgerPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "+L %s\n+L %s 0123456789ABCDEF0123456789ABCDEF\n", bare.ID, madeUp.ID)
	f.Close()

	h.start()
	r, c := h.sync()
	if c.Writes != 0 {
		t.Errorf("writes %v, want none", writes(c))
	}
	if !h.hasLB(bare.ID) || !h.hasLB(madeUp.ID) {
		t.Errorf("a stranger's load balancer was deleted")
	}
	if len(r.Disowned) != 2 || h.ledger.Has(bare.ID) || h.ledger.Has(madeUp.ID) {
		t.Errorf("disowned %v; want both forged entries dropped and reported", r.Disowned)
	}
}

// A load balancer changed behind the agent's back is no longer what the
// agent wrote, so no longer its own: left alone when its service goes, and
// replaced as any foreign blocker (docs/design/dataplane.md#foreign-load-balancers)
// when the agent needs its frontend.
func TestLoadBalancerChangedBehindTheAgentsBackIsNotItsOwn(t *testing.T) {
	h := newHost(t, sim.WS2025, false, false)
	workload(h)
	h.sync()
	changed := h.lbByVIP("10.20.30.43")
	changed.BackendEndpointIDs = []string{h.localEndpoint("192.168.1.5").ID}
	if _, err := h.sim.ModifyLoadBalancer(context.Background(), changed.ID, changed); err != nil {
		t.Fatal(err)
	}
	svc3, slice3 := h.svcs["svc3"], h.slices["svc3"]
	h.deleteService("svc3")
	r, c := h.sync()
	if c.Writes != 0 || !h.hasLB(changed.ID) {
		t.Errorf("writes %v, LB present %v; want the changed LB left alone", writes(c), h.hasLB(changed.ID))
	}
	if len(r.Disowned) != 1 || !strings.Contains(r.Disowned[0], changed.ID) || h.ledger.Has(changed.ID) {
		t.Errorf("disowned %v; want the changed LB reported and its entry dropped", r.Disowned)
	}

	h.svcs["svc3"], h.slices["svc3"] = svc3, slice3
	r, c = h.sync()
	want := map[sim.Op]int{sim.OpCreateLoadBalancer: 2, sim.OpDeleteLoadBalancer: 1}
	if diff := cmp.Diff(want, writes(c)); diff != "" || len(r.ForeignReplaced) != 1 {
		t.Errorf("service back: writes (-want +got):\n%s foreign replaced %v", diff, r.ForeignReplaced)
	}
}

// Entries of load balancers HNS no longer has are dropped once a full list
// shows them gone, also after a restart, when the agent never mapped them.
func TestLedgerDropsLoadBalancersHNSNoLongerHas(t *testing.T) {
	h := newHost(t, sim.WS2022, false, true)
	workload(h)
	h.sync()
	// While the agent is down, svc3 and its load balancer are deleted.
	gone := h.lbByVIP("10.20.30.43").ID
	if err := h.sim.RemoveLoadBalancer(gone); err != nil {
		t.Fatal(err)
	}
	h.deleteService("svc3")
	h.start()
	if r, c := h.sync(); c.Writes != 0 || len(r.Failures) != 0 {
		t.Fatalf("sync: writes %v, failures %v", writes(c), r.Failures)
	}
	h.start()
	if got := h.ledger.IDs(); len(got) != 3 || h.ledger.Has(gone) {
		t.Errorf("ledger after reopening = %v; want the 3 LBs HNS has, not %s", got, gone)
	}
}

// The journal is compacted as it grows, not only when the agent starts:
// 10 rounds of churn write about 1,000 lines, for a handful of live entries.
func TestLedgerCompactsAsItGoes(t *testing.T) {
	h := newHost(t, sim.WS2022, false, true)
	workload(h)
	h.sync()
	for range 10 {
		for i := range 25 {
			name := fmt.Sprintf("churn%d", i)
			h.service(name, fmt.Sprintf("10.20.31.%d", i+1), 0)
			h.endpoints(name, "192.168.1.5@node-1")
		}
		h.sync()
		for i := range 25 {
			h.deleteService(fmt.Sprintf("churn%d", i))
		}
		h.sync()
	}
	if n := len(h.ledgerLines()); n > 600 {
		t.Errorf("the journal has %d lines for %d live entries", n, len(h.ledger.IDs()))
	}
	h.start()
	if _, c := h.sync(); c.Writes != 0 || len(h.ledger.IDs()) != 4 {
		t.Errorf("restart after compactions: writes %v, %d LBs recorded", writes(c), len(h.ledger.IDs()))
	}
}

// A ledger written by an earlier version (bare IDs, endpoints recorded too)
// is read: each entry is re-proven by content on the first sync, and one
// that proves nothing gives no right to its load balancer.
func TestLedgerOfAnEarlierVersionIsReproven(t *testing.T) {
	h := newHost(t, sim.WS2022, true, true)
	workload(h)
	foreign := h.stranger("10.99.0.1")
	h.sync()
	var b strings.Builder
	st := h.snapshot()
	for _, lb := range st.LoadBalancers {
		fmt.Fprintf(&b, "+L %s\n", lb.ID) // the foreign LB too, by mistake
	}
	for _, ep := range st.Endpoints {
		if hns.HasOwnedName(ep) {
			fmt.Fprintf(&b, "+E %s\n", ep.ID)
		}
	}
	if err := os.WriteFile(h.ledgerPath, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	h.start()
	r, c := h.sync()
	if c.Writes != 0 {
		t.Errorf("writes %v, want none", writes(c))
	}
	if diff := cmp.Diff(st, h.snapshot(), cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{})); diff != "" {
		t.Errorf("host changed (-before +after):\n%s", diff)
	}
	if r.Adopted != 4 || len(r.Disowned) != 1 || !strings.Contains(r.Disowned[0], foreign.ID) {
		t.Errorf("adopted %d, disowned %v; want the 4 LBs re-proven and the foreign one disowned", r.Adopted, r.Disowned)
	}
	h.start()
	for _, line := range h.ledgerLines() {
		if f := strings.Fields(line); len(f) != 3 || f[0] != "+L" || f[1] == foreign.ID {
			t.Errorf("journal line %q; want +L <id> <fingerprint> of the agent's 4 LBs", line)
		}
	}
}

// killedInModify stands for an agent process killed right after HNS
// carried out a modify, before the agent could record the new content.
type killedInModify struct{ *sim.Sim }

func (k killedInModify) ModifyLoadBalancer(ctx context.Context, id string, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	if _, err := k.Sim.ModifyLoadBalancer(ctx, id, lb); err != nil {
		return hns.LoadBalancer{}, err
	}
	panic(killed{})
}

// The content a modify asks for is accepted before the call: a kill right
// after it leaves a load balancer the restarted agent still proves its own
// (and modifies, rather than replacing it as a stranger's).
func TestKillDuringModifyKeepsTheLoadBalancerTheAgents(t *testing.T) {
	h := newHost(t, sim.WS2025, false, true)
	workload(h)
	h.sync()
	h.app = New(killedInModify{h.sim}, h.ledger, WithClock(h.clk))
	h.endpoints("svc3", "192.168.1.6@node-1", "192.168.1.5@node-1")
	func() {
		defer func() {
			if p := recover(); p != (killed{}) {
				t.Fatalf("recovered %v", p)
			}
		}()
		h.sync()
	}()
	h.start()
	h.endpoints("svc3", "192.168.1.5@node-1") // another change while it was down
	r, c := h.sync()
	if diff := cmp.Diff(map[sim.Op]int{sim.OpModifyLoadBalancer: 1}, writes(c)); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if len(r.ForeignReplaced) != 0 || len(r.Disowned) != 0 || len(r.Failures) != 0 {
		t.Errorf("result %+v", r)
	}
}

// echoingStaleModify is an HNS that answers a modify with the content asked
// for but keeps the old backends (k/k #131466, as it may answer).
type echoingStaleModify struct{ staleModify }

func (s echoingStaleModify) ModifyLoadBalancer(ctx context.Context, id string, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	if _, err := s.staleModify.ModifyLoadBalancer(ctx, id, lb); err != nil {
		return hns.LoadBalancer{}, err
	}
	lb.ID = id
	return lb, nil
}

// The entry of a modified load balancer accepts the content it had before
// until a later write: when the modify did nothing, the agent still proves
// it its own and falls back to delete and create.
func TestModifyAnsweredButNotCarriedOutStaysTheAgents(t *testing.T) {
	h := newHost(t, sim.WS2025, false, false)
	h.app = New(echoingStaleModify{staleModify{h.sim}}, h.ledger, WithClock(h.clk))
	workload(h)
	h.sync()
	h.endpoints("svc3", "192.168.1.6@node-1", "192.168.1.5@node-1")
	h.sync()
	r, c := h.sync()
	if diff := cmp.Diff(map[sim.Op]int{sim.OpDeleteLoadBalancer: 1, sim.OpCreateLoadBalancer: 1}, writes(c)); diff != "" {
		t.Errorf("next sync: writes (-want +got):\n%s", diff)
	}
	if len(r.ForeignReplaced) != 0 || len(r.Disowned) != 0 {
		t.Errorf("result %+v", r)
	}
}

// timesOutOnce is an HNS whose first load-balancer create does not answer
// in time but is carried out all the same.
type timesOutOnce struct {
	*sim.Sim
	done bool
}

func (s *timesOutOnce) CreateLoadBalancer(ctx context.Context, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	got, err := s.Sim.CreateLoadBalancer(ctx, lb)
	if err != nil || s.done {
		return got, err
	}
	s.done = true
	return hns.LoadBalancer{}, &hns.Error{Op: "CreateLoadBalancer", Kind: hns.ErrTimeout}
}

// A create that timed out may have been carried out: its intent is kept,
// so the next sync takes the LB for the agent's even though the service
// changed meanwhile, and modifies it instead of replacing a "stranger".
func TestTimedOutCreateIsAdoptedByItsIntent(t *testing.T) {
	h := newHost(t, sim.WS2025, false, false)
	h.app = New(&timesOutOnce{Sim: h.sim}, h.ledger, WithClock(h.clk))
	h.service("svc3", "10.20.30.43", 0)
	h.endpoints("svc3", "192.168.1.6@node-1")
	if r, _ := h.sync(); r.LBsFailed != 1 || !hns.IsTimeout(r.Failures[0].Err) {
		t.Fatalf("first sync: %+v", r)
	}
	h.endpoints("svc3", "192.168.1.6@node-1", "192.168.1.5@node-1")
	h.clk.Step(time.Second)
	r, c := h.sync()
	if diff := cmp.Diff(map[sim.Op]int{sim.OpModifyLoadBalancer: 1}, writes(c)); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if r.Adopted != 1 || len(r.ForeignReplaced) != 0 || r.LBsFailed != 0 {
		t.Errorf("result %+v", r)
	}
}
