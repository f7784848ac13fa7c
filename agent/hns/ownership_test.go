package hns_test

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
)

var ctx = context.Background()

func TestLedgerJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "owned")
	l, err := hns.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"b-lb", "a-lb", "gone"} {
		if err := l.Record(hns.KindLoadBalancer, id); err != nil {
			t.Fatal(err)
		}
	}
	l.Record(hns.KindEndpoint, "ep1")
	l.Forget(hns.KindLoadBalancer, "GONE") // case-insensitive
	l.Close()

	// A kill mid-append leaves a torn line; it is ignored.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("+L half")
	f.Close()

	l2, err := hns.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	got := map[string][]string{"lb": l2.IDs(hns.KindLoadBalancer), "ep": l2.IDs(hns.KindEndpoint)}
	want := map[string][]string{"lb": {"A-LB", "B-LB"}, "ep": {"EP1"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reloaded ledger (-want +got):\n%s", diff)
	}
	b, _ := os.ReadFile(path)
	if diff := cmp.Diff("+L A-LB\n+L B-LB\n+E EP1\n", string(b)); diff != "" {
		t.Errorf("compacted journal (-want +got):\n%s", diff)
	}
	if !l2.Owns(hns.KindLoadBalancer, "a-lb") || l2.Owns(hns.KindEndpoint, "a-lb") {
		t.Error("Owns is wrong")
	}
}

func newOwnedHost(t *testing.T, ledgerPath string, s *sim.Sim) (*hns.Owned, hns.Network, hns.Endpoint) {
	t.Helper()
	l, err := hns.OpenLedger(ledgerPath)
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
	return hns.NewOwned(s, l), n, pod
}

func TestOwnedOnlyTouchesItsOwnObjects(t *testing.T) {
	dir := t.TempDir()
	s, err := sim.New(sim.WithProfile(sim.WS2025), sim.WithStateFile(filepath.Join(dir, "host.json")))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.AddNetwork(hns.Network{Name: "vxlan0", Type: hns.NetworkTypeOverlay})
	s.AddLocalEndpoint("vxlan0", "pod", netip.MustParseAddr("10.244.1.10"))
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
	lb, err := o.CreateLoadBalancer(ctx, hns.LoadBalancer{
		FrontendVIPs:       []netip.Addr{netip.MustParseAddr("10.96.0.10")},
		PortMapping:        hns.PortMapping{Protocol: 6, InternalPort: 8080, ExternalPort: 80},
		BackendEndpointIDs: []string{pod.ID, remote.ID},
	})
	if err != nil {
		t.Fatal(err)
	}

	refused := []struct {
		name string
		run  func() error
	}{
		{"delete foreign LB", func() error { return o.DeleteLoadBalancer(ctx, foreign.ID) }},
		{"modify foreign LB", func() error { _, err := o.ModifyLoadBalancer(ctx, foreign.ID, foreign); return err }},
		{"delete local pod endpoint", func() error { return o.DeleteEndpoint(ctx, pod.ID) }},
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
	// re-adopts with reads only.
	s2, err := sim.New(sim.WithStateFile(filepath.Join(dir, "host.json")))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	o2, _, _ := newOwnedHost(t, filepath.Join(dir, "owned"), s2)
	s2.Reset()
	lbs, _ := o2.ListLoadBalancers(ctx)
	eps, _ := o2.ListEndpoints(ctx, n.ID)
	var ownedLBs, ownedEPs []string
	for _, x := range lbs {
		if o2.OwnsLoadBalancer(x.ID) {
			ownedLBs = append(ownedLBs, x.ID)
		}
	}
	for _, x := range eps {
		if o2.OwnsEndpoint(x) {
			ownedEPs = append(ownedEPs, x.ID)
		}
	}
	if diff := cmp.Diff([]string{lb.ID}, ownedLBs); diff != "" {
		t.Errorf("re-adopted LBs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{remote.ID}, ownedEPs); diff != "" {
		t.Errorf("re-adopted endpoints (-want +got):\n%s", diff)
	}
	if c := s2.Counts(); c.Writes != 0 {
		t.Errorf("restart wrote to HNS: %+v", c)
	}

	// An LB deleted behind our back is forgotten on delete (not found).
	s2.RemoveLoadBalancer(lb.ID)
	if err := o2.DeleteLoadBalancer(ctx, lb.ID); !hns.IsNotFound(err) {
		t.Errorf("delete of vanished LB: %v", err)
	}
	if o2.OwnsLoadBalancer(lb.ID) {
		t.Error("vanished LB still in ledger")
	}
	if err := o2.DeleteEndpoint(ctx, remote.ID); err != nil || o2.OwnsEndpoint(hns.Endpoint{ID: remote.ID}) {
		t.Errorf("delete owned endpoint: %v", err)
	}
	// HNS down: a failed delete is not "gone", the ledger keeps the ID.
	o2.Adopt(hns.KindLoadBalancer, foreign.ID)
	s2.SetHNSRunning(false)
	if err := o2.DeleteLoadBalancer(ctx, foreign.ID); !hns.IsHNSNotRunning(err) || !o2.OwnsLoadBalancer(foreign.ID) {
		t.Errorf("delete while HNS down: %v, owned=%v", err, o2.OwnsLoadBalancer(foreign.ID))
	}
}

func TestLedgerOwnsIgnoresCaseAndSpace(t *testing.T) {
	l, err := hns.OpenLedger("")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Record(hns.KindEndpoint, "ab-12"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"AB-12", "ab-12", "Ab-12", " ab-12 "} {
		if !l.Owns(hns.KindEndpoint, id) {
			t.Errorf("Owns(%q) = false, want true", id)
		}
	}
	for _, id := range []string{"AB-1", "", "ab-123"} {
		if l.Owns(hns.KindEndpoint, id) {
			t.Errorf("Owns(%q) = true, want false", id)
		}
	}
	if l.Owns(hns.KindLoadBalancer, "AB-12") {
		t.Error("Owns mixes kinds")
	}
	// The agent asks for every listed object on every sync.
	if n := testing.AllocsPerRun(100, func() { l.Owns(hns.KindEndpoint, "AB-12") }); n != 0 {
		t.Errorf("Owns of a stored ID allocates %v times, want 0", n)
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
	// A journal of an older version: its lines keep their meaning.
	if err := os.WriteFile(path, []byte("+L OLD-LB\n+E EP1\n+L GONE\n-L GONE\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := sim.MustNew(sim.WithProfile(sim.WS2025))
	defer s.Close()
	s.AddNetwork(hns.Network{Name: "vxlan0", Type: hns.NetworkTypeOverlay})
	s.AddLocalEndpoint("vxlan0", "pod", netip.MustParseAddr("10.244.1.10"))
	o, _, pod := newOwnedHost(t, path, s)
	lb := func(vip string) hns.LoadBalancer {
		return hns.LoadBalancer{FrontendVIPs: []netip.Addr{netip.MustParseAddr(vip)},
			PortMapping: hns.PortMapping{Protocol: 6, InternalPort: 8080, ExternalPort: 80}, BackendEndpointIDs: []string{pod.ID}}
	}
	// A stranger's LB, identical to what we are about to create elsewhere.
	stranger, _ := s.AddLoadBalancer(lb("10.96.0.11"))

	killed := hns.NewOwned(crashAfterCreate{s}, o.Ledger)
	func() {
		defer func() { recover() }()
		killed.CreateLoadBalancer(ctx, lb("10.96.0.10"))
	}()
	// A create HNS refused leaves no intent behind.
	if _, err := o.CreateLoadBalancer(ctx, lb("10.96.0.11")); !hns.IsPortExists(err) {
		t.Fatalf("create on a taken frontend: %v", err)
	}
	o.Ledger.Close()

	// Compaction keeps the pending intent, and the old lines.
	l, err := hns.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b, _ := os.ReadFile(path)
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 3 || lines[0] != "+L OLD-LB" || lines[1] != "+E EP1" || !strings.HasPrefix(lines[2], "+I ") {
		t.Fatalf("compacted journal:\n%s", b)
	}
	o2 := hns.NewOwned(s, l)
	listed, _ := s.ListLoadBalancers(ctx)
	s.Reset()
	n, err := o2.AdoptCreated(listed)
	if err != nil || n != 1 {
		t.Fatalf("AdoptCreated = %d, %v; want 1", n, err)
	}
	for _, x := range listed {
		if want := x.ID != stranger.ID; o2.OwnsLoadBalancer(x.ID) != want {
			t.Errorf("LB %s owned = %v, want %v", x, !want, want)
		}
	}
	if c := s.Counts(); c.Total() != 0 {
		t.Errorf("AdoptCreated called HNS: %+v", c)
	}
	// The intent is settled: a second call adopts nothing.
	if n, _ := o2.AdoptCreated(listed); n != 0 {
		t.Errorf("second AdoptCreated adopted %d", n)
	}
}
