package ownership_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/agent/ownership"
)

var ctx = context.Background()

func newOwnedHost(t *testing.T, ledgerPath string, s *sim.Sim) (*ownership.Owned, hns.Network, hns.Endpoint) {
	t.Helper()
	l, err := ownership.OpenLedger(ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	n, err := s.GetNetworkByName(ctx, "vxlan0")
	if err != nil {
		t.Fatal(err)
	}
	pod, err := s.GetEndpointByName(ctx, "pod")
	if err != nil {
		t.Fatal(err)
	}
	return ownership.NewOwned(s, l), n, pod
}

func newSim(t *testing.T, opts ...sim.Option) *sim.Sim {
	t.Helper()
	s, err := sim.New(append([]sim.Option{sim.WithProfile(sim.WS2025)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.AddNetwork(hns.Network{Name: "vxlan0", Type: hns.NetworkTypeOverlay}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddLocalEndpoint("vxlan0", "pod", netip.MustParseAddr("10.244.1.10")); err != nil {
		t.Fatal(err)
	}
	return s
}

func lbOn(vip string, backends ...string) hns.LoadBalancer {
	return hns.LoadBalancer{FrontendVIPs: []netip.Addr{netip.MustParseAddr(vip)},
		PortMapping: hns.PortMapping{Protocol: 6, InternalPort: 8080, ExternalPort: 80}, BackendEndpointIDs: backends}
}

func listed(t *testing.T, c hns.Client, id string) hns.LoadBalancer {
	t.Helper()
	lb, err := c.GetLoadBalancer(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return lb
}

func TestLedgerJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "owned")
	// Lines of an earlier version: endpoints, and LBs without fingerprint.
	if err := os.WriteFile(path, []byte("+E EP1\n+L old-lb\n+L gone\n-L GONE\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newSim(t)
	o, _, pod := newOwnedHost(t, path, s)
	lb, err := o.CreateLoadBalancer(ctx, lbOn("10.96.0.10", pod.ID))
	if err != nil {
		t.Fatal(err)
	}
	o.Ledger.Close()
	// A kill mid-append leaves a torn line; it is ignored.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("+L half")
	f.Close()

	l, err := ownership.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if diff := cmp.Diff([]string{lb.ID, "OLD-LB"}, l.IDs()); diff != "" {
		t.Errorf("reloaded ledger (-want +got):\n%s", diff)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "+L "+lb.ID+" ") || len(strings.Fields(lines[0])) != 3 || lines[1] != "+L OLD-LB" {
		t.Errorf("compacted journal:\n%s", b)
	}
	o2 := ownership.NewOwned(s, l)
	if !o2.OwnsLoadBalancer(listed(t, s, lb.ID)) {
		t.Error("the LB created before the restart is not proven the agent's")
	}
	if !l.Has("old-lb") || o2.OwnsLoadBalancer(hns.LoadBalancer{ID: "OLD-LB"}) {
		t.Error("an entry without fingerprint must be read, and prove nothing")
	}
}

func TestOwnedOnlyTouchesItsOwnObjects(t *testing.T) {
	dir := t.TempDir()
	s := newSim(t, sim.WithStateFile(filepath.Join(dir, "host.json")))
	foreign, err := s.AddLoadBalancer(hns.LoadBalancer{PortMapping: hns.PortMapping{Protocol: 6, InternalPort: 9, ExternalPort: 9}})
	if err != nil {
		t.Fatal(err)
	}

	o, n, pod := newOwnedHost(t, filepath.Join(dir, "owned"), s)
	remote, err := o.CreateEndpoint(ctx, n.ID, hns.Endpoint{IPs: []netip.Addr{netip.MustParseAddr("10.244.2.5")}, Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	if remote.Name != "winproxy-10.244.2.5" || !o.OwnsEndpoint(remote) || o.OwnsEndpoint(pod) {
		t.Errorf("endpoint ownership wrong: %+v", remote)
	}
	lb, err := o.CreateLoadBalancer(ctx, lbOn("10.96.0.10", pod.ID, remote.ID))
	if err != nil {
		t.Fatal(err)
	}
	// The foreign LB's ID in the ledger, as a bare entry of an earlier
	// version would put it, gives no right to it.
	o.Ledger.Close()
	f, _ := os.OpenFile(filepath.Join(dir, "owned"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("+L " + foreign.ID + "\n")
	f.Close()
	o, _, _ = newOwnedHost(t, filepath.Join(dir, "owned"), s)
	if !o.Ledger.Has(foreign.ID) {
		t.Fatal("the bare entry was not read")
	}
	changed := listed(t, s, lb.ID)
	changed.BackendEndpointIDs = changed.BackendEndpointIDs[:1]

	refused := []struct {
		name string
		run  func() error
	}{
		{"delete foreign LB", func() error { return o.DeleteLoadBalancer(ctx, foreign) }},
		{"modify foreign LB", func() error { _, err := o.ModifyLoadBalancer(ctx, foreign, foreign); return err }},
		{"delete own LB as someone changed it", func() error { return o.DeleteLoadBalancer(ctx, changed) }},
		{"modify own LB as someone changed it", func() error { _, err := o.ModifyLoadBalancer(ctx, changed, changed); return err }},
		{"delete local pod endpoint", func() error { return o.DeleteEndpoint(ctx, pod) }},
	}
	s.Reset()
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); !hns.IsNotOwned(err) {
				t.Errorf("got %v, want ErrNotOwned", err)
			}
		})
	}
	if c := s.Counts(); c.Total() != 0 {
		t.Errorf("refusals reached HNS: %+v", c)
	}

	// Restart: a new process with a new Sim and ledger on the same files
	// recognises its objects with reads only.
	s2, err := sim.New(sim.WithStateFile(filepath.Join(dir, "host.json")))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	o2, _, _ := newOwnedHost(t, filepath.Join(dir, "owned"), s2)
	s2.Reset()
	lbs, _ := s2.ListLoadBalancers(ctx)
	eps, _ := s2.ListEndpoints(ctx, n.ID)
	var ownedLBs, ownedEPs []string
	for _, x := range lbs {
		if o2.OwnsLoadBalancer(x) {
			ownedLBs = append(ownedLBs, x.ID)
		}
	}
	for _, x := range eps {
		if o2.OwnsEndpoint(x) {
			ownedEPs = append(ownedEPs, x.ID)
		}
	}
	if diff := cmp.Diff([]string{lb.ID}, ownedLBs); diff != "" {
		t.Errorf("LBs proven the agent's (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{remote.ID}, ownedEPs); diff != "" {
		t.Errorf("endpoints proven the agent's (-want +got):\n%s", diff)
	}
	if c := s2.Counts(); c.Writes != 0 {
		t.Errorf("restart wrote to HNS: %+v", c)
	}

	// HNS down: a failed delete is not "gone", the ledger keeps the ID.
	cur := listed(t, s2, lb.ID)
	s2.SetHNSRunning(false)
	if err := o2.DeleteLoadBalancer(ctx, cur); !hns.IsHNSNotRunning(err) || !o2.Ledger.Has(lb.ID) {
		t.Errorf("delete while HNS down: %v, recorded=%v", err, o2.Ledger.Has(lb.ID))
	}
	s2.SetHNSRunning(true)
	// An LB deleted behind our back is forgotten on delete (not found).
	s2.RemoveLoadBalancer(lb.ID)
	if err := o2.DeleteLoadBalancer(ctx, cur); !hns.IsNotFound(err) || o2.Ledger.Has(lb.ID) {
		t.Errorf("delete of vanished LB: %v, recorded=%v", err, o2.Ledger.Has(lb.ID))
	}
	if err := o2.DeleteEndpoint(ctx, remote); err != nil {
		t.Errorf("delete owned endpoint: %v", err)
	}
}

// A modified LB's entry accepts the content before the modify, the one
// asked for and the one HNS answered, so that a kill, a timeout or a modify
// HNS did not carry out leaves an LB still proven the agent's; any other
// content is not the agent's.
func TestModifyRecordsTheContentsItMayLeave(t *testing.T) {
	s := newSim(t)
	o, _, pod := newOwnedHost(t, "", s)
	before, err := o.CreateLoadBalancer(ctx, lbOn("10.96.0.10", pod.ID))
	if err != nil {
		t.Fatal(err)
	}
	asked := before
	asked.PortMapping.InternalPort = 8081
	after, err := o.ModifyLoadBalancer(ctx, before, asked)
	if err != nil {
		t.Fatal(err)
	}
	other := after
	other.PortMapping.InternalPort = 8082
	for _, tt := range []struct {
		lb   hns.LoadBalancer
		want bool
	}{{before, true}, {after, true}, {other, false}} {
		if got := o.OwnsLoadBalancer(tt.lb); got != tt.want {
			t.Errorf("OwnsLoadBalancer(%v) = %v, want %v", tt.lb, got, tt.want)
		}
	}
	// The next modify narrows the entry to what the LB held then.
	if _, err := o.ModifyLoadBalancer(ctx, after, other); err != nil {
		t.Fatal(err)
	}
	if o.OwnsLoadBalancer(before) || !o.OwnsLoadBalancer(after) || !o.OwnsLoadBalancer(other) {
		t.Error("the second modify did not narrow the entry to the contents it may leave")
	}
}

func TestLedgerHasIgnoresCaseAndSpace(t *testing.T) {
	s := newSim(t)
	o, _, pod := newOwnedHost(t, "", s)
	lb, err := o.CreateLoadBalancer(ctx, lbOn("10.96.0.10", pod.ID))
	if err != nil {
		t.Fatal(err)
	}
	l := o.Ledger
	for _, id := range []string{lb.ID, strings.ToLower(lb.ID), " " + lb.ID + " "} {
		if !l.Has(id) {
			t.Errorf("Has(%q) = false, want true", id)
		}
	}
	for _, id := range []string{lb.ID[1:], "", lb.ID + "0"} {
		if l.Has(id) {
			t.Errorf("Has(%q) = true, want false", id)
		}
	}
	// The agent asks for listed objects on every sync.
	if n := testing.AllocsPerRun(100, func() { l.Has(lb.ID) }); n != 0 {
		t.Errorf("Has of a stored ID allocates %v times, want 0", n)
	}
}

// crashAfterCreate stands for a process killed after HNS created an LB and
// before the ledger recorded it.
type crashAfterCreate struct{ *sim.Sim }

func (c crashAfterCreate) CreateLoadBalancer(ctx context.Context, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	c.Sim.CreateLoadBalancer(ctx, lb)
	panic("killed")
}

func TestLedgerIntentProvesAnUnrecordedCreate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "owned")
	s := newSim(t)
	o, _, pod := newOwnedHost(t, path, s)
	// A stranger's LB, identical to what we are about to create elsewhere.
	stranger, _ := s.AddLoadBalancer(lbOn("10.96.0.11", pod.ID))

	killed := ownership.NewOwned(crashAfterCreate{s}, o.Ledger)
	func() {
		defer func() { recover() }()
		killed.CreateLoadBalancer(ctx, lbOn("10.96.0.10", pod.ID))
	}()
	// A create HNS refused leaves no intent behind.
	if _, err := o.CreateLoadBalancer(ctx, lbOn("10.96.0.11", pod.ID)); !hns.IsPortExists(err) {
		t.Fatalf("create on a taken frontend: %v", err)
	}
	o.Ledger.Close()

	// Compaction keeps the pending intent.
	l, err := ownership.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b, _ := os.ReadFile(path)
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "+I ") {
		t.Fatalf("compacted journal:\n%s", b)
	}
	o2 := ownership.NewOwned(s, l)
	lbs, _ := s.ListLoadBalancers(ctx)
	s.Reset()
	n, err := o2.Settle(lbs)
	if err != nil || n != 1 {
		t.Fatalf("Settle = %d, %v; want 1", n, err)
	}
	for _, x := range lbs {
		if want := x.ID != stranger.ID; o2.OwnsLoadBalancer(x) != want {
			t.Errorf("LB %s owned = %v, want %v", x, !want, want)
		}
	}
	if c := s.Counts(); c.Total() != 0 {
		t.Errorf("Settle called HNS: %+v", c)
	}
	// The intent is settled: a second call adopts nothing.
	if n, _ := o2.Settle(lbs); n != 0 {
		t.Errorf("second Settle adopted %d", n)
	}
}

// Settle drops the entries of LBs a full list no longer shows.
func TestSettleForgetsLoadBalancersHNSNoLongerHas(t *testing.T) {
	s := newSim(t)
	o, _, pod := newOwnedHost(t, "", s)
	kept, _ := o.CreateLoadBalancer(ctx, lbOn("10.96.0.10", pod.ID))
	gone, _ := o.CreateLoadBalancer(ctx, lbOn("10.96.0.11", pod.ID))
	if err := s.RemoveLoadBalancer(gone.ID); err != nil {
		t.Fatal(err)
	}
	lbs, _ := s.ListLoadBalancers(ctx)
	if _, err := o.Settle(lbs); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{kept.ID}, o.Ledger.IDs()); diff != "" {
		t.Errorf("recorded after Settle (-want +got):\n%s", diff)
	}
	// Nothing gone, nothing pending: the usual sync's Settle costs nothing.
	if n := testing.AllocsPerRun(100, func() { o.Settle(lbs) }); n != 0 {
		t.Errorf("Settle with nothing to do allocates %v times, want 0", n)
	}
}

// A delete of an object that is gone counts as done whatever code HNS answers: on a code that
// does not say why (here E_FAIL), the object is looked up by ID. One that is still there stays a
// failure.
func TestDeleteOfAMissingObjectWithAnUnknownCode(t *testing.T) {
	eFail := hns.NewError(hns.OpDeleteLoadBalancer, "", 0x80004005, nil)
	for _, tc := range []struct {
		name    string
		gone    bool
		deleted bool
	}{
		{"gone", true, true},
		{"still there", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t)
			owned, n, pod := newOwnedHost(t, "", s)
			remote, err := owned.CreateEndpoint(ctx, n.ID, hns.Endpoint{IPs: []netip.Addr{netip.MustParseAddr("10.244.2.9")}, Remote: true})
			if err != nil {
				t.Fatal(err)
			}
			lb, err := owned.CreateLoadBalancer(ctx, lbOn("10.0.0.9", pod.ID))
			if err != nil {
				t.Fatal(err)
			}
			if tc.gone {
				if err := s.RemoveLoadBalancer(lb.ID); err != nil {
					t.Fatal(err)
				}
				if err := s.RemoveEndpoint(remote.ID); err != nil {
					t.Fatal(err)
				}
			}
			s.FailOp(sim.OpDeleteLoadBalancer, eFail, 1)
			s.FailOp(sim.OpDeleteEndpoint, hns.NewError(hns.OpDeleteEndpoint, "", 0x80004005, nil), 1)
			lbErr, epErr := owned.DeleteLoadBalancer(ctx, lb), owned.DeleteEndpoint(ctx, remote)
			for what, err := range map[string]error{"load balancer": lbErr, "endpoint": epErr} {
				if tc.deleted != (err == nil || hns.IsNotFound(err)) {
					t.Errorf("delete of the %s %s: %v; want deleted %v", what, tc.name, err, tc.deleted)
				}
			}
			if owned.Ledger.Has(lb.ID) == tc.deleted {
				t.Errorf("ledger has the load balancer: %v, want %v", owned.Ledger.Has(lb.ID), !tc.deleted)
			}
		})
	}
}

// TestDeleteIsWrittenWithTheNextChange: the line of a deleted load balancer waits for the
// journal's next write, so an event's delete and the create replacing it write the journal once
// each for the create's intent and record, not once more for the delete; Flush, which ends every
// sync, writes it when no change follows. A kill before that leaves the entry of an ID HNS no
// longer lists, which the next list drops.
func TestDeleteIsWrittenWithTheNextChange(t *testing.T) {
	journal := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	path := filepath.Join(t.TempDir(), "owned")
	s := newSim(t)
	o, _, pod := newOwnedHost(t, path, s)
	old, err := o.CreateLoadBalancer(ctx, lbOn("10.96.0.10", pod.ID))
	if err != nil {
		t.Fatal(err)
	}
	deleted := "-L " + string(hns.IDOf(old.ID)) + "\n"
	if err := o.DeleteLoadBalancer(ctx, listed(t, s, old.ID)); err != nil {
		t.Fatal(err)
	}
	if o.Ledger.Has(old.ID) || strings.Contains(journal(path), deleted) {
		t.Fatalf("after the delete: recorded %v, journal:\n%s\nwant forgotten, and no line written yet", o.Ledger.Has(old.ID), journal(path))
	}

	// A kill now: the reopened ledger has the entry until a list drops it.
	if err := os.WriteFile(path+".copy", []byte(journal(path)), 0o600); err != nil {
		t.Fatal(err)
	}
	reopened, err := ownership.OpenLedger(path + ".copy")
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	lbs, _ := s.ListLoadBalancers(ctx)
	if _, err := ownership.NewOwned(s, reopened).Settle(lbs); err != nil || reopened.Has(old.ID) {
		t.Errorf("after a kill and a list: recorded %v (%v), want dropped", reopened.Has(old.ID), err)
	}

	// The create's intent carries the delete's line: it comes first, in the same write.
	if _, err := o.CreateLoadBalancer(ctx, lbOn("10.96.0.10", pod.ID)); err != nil {
		t.Fatal(err)
	}
	if j := journal(path); !strings.Contains(j, deleted+"+I ") {
		t.Errorf("journal after the create:\n%s\nwant %q before the intent", j, deleted)
	}

	// A delete with no change after it: Flush writes it.
	now, _ := s.ListLoadBalancers(ctx)
	if err := o.DeleteLoadBalancer(ctx, now[0]); err != nil {
		t.Fatal(err)
	}
	if err := o.Ledger.Flush(); err != nil {
		t.Fatal(err)
	}
	if j := journal(path); !strings.HasSuffix(j, "-L "+string(hns.IDOf(now[0].ID))+"\n") {
		t.Errorf("journal after Flush:\n%s\nwant the delete's line last", j)
	}
}
