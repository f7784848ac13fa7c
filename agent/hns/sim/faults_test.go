package sim_test

import (
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
)

// outcomes runs n Version calls and records which failed.
func outcomes(s *sim.Sim, n int) []bool {
	out := make([]bool, n)
	for i := range out {
		_, err := s.Version(ctx)
		out[i] = err != nil
	}
	return out
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name   string
		inject func(s *sim.Sim)
		want   []bool
	}{
		{"none", func(*sim.Sim) {}, []bool{false, false, false}},
		{"nth", func(s *sim.Sim) { s.FailNth(2, nil) }, []bool{false, true, false}},
		{"op twice", func(s *sim.Sim) { s.FailOp(sim.OpVersion, nil, 2) }, []bool{true, true, false}},
		{"op always", func(s *sim.Sim) { s.FailOp(sim.OpVersion, nil, -1) }, []bool{true, true, true}},
		{"other op", func(s *sim.Sim) { s.FailOp(sim.OpListLoadBalancers, nil, -1) }, []bool{false, false, false}},
		{"rate 1", func(s *sim.Sim) { s.SetFailureRate(1, 1, nil) }, []bool{true, true, true}},
		{"cleared", func(s *sim.Sim) { s.FailOp(sim.OpVersion, nil, -1); s.ClearFaults() }, []bool{false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sim.MustNew()
			tt.inject(s)
			if diff := cmp.Diff(tt.want, outcomes(s, len(tt.want))); diff != "" {
				t.Errorf("failures (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFailureRateIsReproducible(t *testing.T) {
	run := func() []bool {
		s := sim.MustNew()
		s.SetFailureRate(0.3, 42, nil)
		return outcomes(s, 200)
	}
	a, b := run(), run()
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different failures:\n%s", diff)
	}
	n := 0
	for _, f := range a {
		if f {
			n++
		}
	}
	if n < 30 || n > 90 {
		t.Errorf("%d/200 failures at rate 0.3", n)
	}
}

func TestInjectedErrorsAreClassified(t *testing.T) {
	tests := []struct {
		inject error
		check  func(error) bool
		text   string
	}{
		{hns.ErrPortExists, hns.IsPortExists, "0x803b0013"},
		{hns.ErrHNSNotRunning, hns.IsHNSNotRunning, "0x6b5"},
		{hns.ErrLoadBalancerNotFound, isErr(hns.ErrLoadBalancerNotFound), "0x490"},
		{hns.ErrNotImplemented, hns.IsNotImplemented, "0x80004001"},
		{nil, isErr(sim.ErrInjected), "0x80004005"},
		{errors.New("custom"), func(err error) bool { return err != nil && !hns.IsNotFound(err) }, "custom"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			s := sim.MustNew()
			s.FailOp(sim.OpCreateLoadBalancer, tt.inject, 1)
			_, err := s.CreateLoadBalancer(ctx, hns.LoadBalancer{})
			if !tt.check(err) || !strings.Contains(err.Error(), tt.text) {
				t.Errorf("got %v", err)
			}
			if got := s.Counts().Failed[sim.OpCreateLoadBalancer]; got != 1 {
				t.Errorf("failed count %d", got)
			}
		})
	}
}

func TestLatency(t *testing.T) {
	s := sim.MustNew(sim.WithLatency(3*time.Millisecond), sim.WithOpLatency(sim.OpCreateLoadBalancer, 7*time.Millisecond))
	var waited []time.Duration
	s.SetSleep(func(ctx context.Context, d time.Duration) error {
		waited = append(waited, d)
		return ctx.Err()
	})
	s.Version(ctx)
	s.CreateLoadBalancer(ctx, hns.LoadBalancer{})
	if diff := cmp.Diff([]time.Duration{3 * time.Millisecond, 7 * time.Millisecond}, waited); diff != "" {
		t.Errorf("latencies (-want +got):\n%s", diff)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Version(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
}

func TestPersistence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "host.json")
	a, err := sim.New(sim.WithStateFile(path), sim.WithProfile(sim.WS2025), sim.WithDeterministicIDs())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	n, _ := a.AddNetwork(hns.Network{Name: "cbr0", Type: hns.NetworkTypeL2Bridge})
	pod, _ := a.AddLocalEndpoint("cbr0", "pod", ip("10.244.1.10"))
	lb, err := a.CreateLoadBalancer(ctx, hns.LoadBalancer{PortMapping: hns.PortMapping{Protocol: 6, InternalPort: 1, ExternalPort: 30001}, BackendEndpointIDs: []string{pod.ID}})
	if err != nil {
		t.Fatal(err)
	}

	// A second process (another Sim on the same file) sees the same host,
	// with the file's profile, not its own option.
	b, err := sim.New(sim.WithStateFile(path), sim.WithProfile(sim.WS2019), sim.WithDeterministicIDs())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if v, err := b.Version(ctx); err != nil || v != sim.WS2025.Version {
		t.Errorf("b.Version = %v, %v; want the file's %v", v, err, sim.WS2025.Version)
	}
	got, err := b.GetLoadBalancer(ctx, lb.ID)
	if diff := cmp.Diff(lb, got, addrOpts); err != nil || diff != "" {
		t.Errorf("b sees LB: err=%v diff:\n%s", err, diff)
	}
	// Writes by b are seen by a, IDs stay unique across both.
	ep, err := b.CreateEndpoint(ctx, n.ID, hns.Endpoint{IPs: []netip.Addr{ip("10.244.2.5")}, Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	if ep.ID == pod.ID || ep.ID == lb.ID {
		t.Errorf("ID reused across processes: %s", ep.ID)
	}
	if _, err := a.GetEndpointByName(ctx, ep.Name); err != nil {
		t.Errorf("a does not see b's endpoint: %v", err)
	}
	if err := a.RemoveLoadBalancer(lb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetLoadBalancer(ctx, lb.ID); !hns.IsNotFound(err) {
		t.Errorf("b still sees LB removed by a: %v", err)
	}
	// Stopping HNS is a host property.
	a.SetHNSRunning(false)
	if _, err := b.ListLoadBalancers(ctx); !hns.IsHNSNotRunning(err) {
		t.Errorf("b: %v, want not running", err)
	}
	a.SetHNSRunning(true)

	// A restarted process (new Sim, a and b gone) sees everything.
	want, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	b.Close()
	c, err := sim.New(sim.WithStateFile(path))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got2, err := c.Snapshot()
	if diff := cmp.Diff(want, got2, addrOpts); err != nil || diff != "" {
		t.Errorf("restart: err=%v (-want +got):\n%s", err, diff)
	}
	if len(got2.Endpoints) != 2 || len(got2.LoadBalancers) != 0 {
		t.Errorf("unexpected restart state %+v", got2)
	}
}

func TestPersistenceConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "host.json")
	sims := make([]*sim.Sim, 3)
	for i := range sims {
		s, err := sim.New(sim.WithStateFile(path), sim.WithDeterministicIDs())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sims[i] = s
	}
	if _, err := sims[0].AddNetwork(hns.Network{Name: "cbr0"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	for i, s := range sims {
		go func() {
			for j := range 20 {
				lb := hns.LoadBalancer{PortMapping: hns.PortMapping{Protocol: 6, InternalPort: 80, ExternalPort: uint16(30000 + i*100 + j)}}
				if _, err := s.CreateLoadBalancer(ctx, lb); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range sims {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	st, err := sims[1].Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, lb := range st.LoadBalancers {
		ids[lb.ID] = true
	}
	if len(st.LoadBalancers) != 60 || len(ids) != 60 {
		t.Errorf("got %d LBs with %d distinct IDs, want 60", len(st.LoadBalancers), len(ids))
	}
}

func TestProfileByName(t *testing.T) {
	tests := []struct {
		in      string
		want    hns.Version
		wantErr bool
	}{
		{"ws2019", hns.Version{Major: 9, Minor: 5}, false},
		{"WS2022", hns.Version{Major: 13, Minor: 3}, false},
		{"2025", hns.Version{Major: 15, Minor: 5}, false},
		{"ws2016", hns.Version{}, true},
	}
	for _, tt := range tests {
		p, err := sim.ProfileByName(tt.in)
		if (err != nil) != tt.wantErr || p.Version != tt.want {
			t.Errorf("ProfileByName(%q) = %v, %v", tt.in, p.Version, err)
		}
	}
	caps := map[string]hns.Capabilities{}
	for _, p := range sim.Profiles() {
		caps[p.Name] = p.Capabilities()
	}
	want := map[string]hns.Capabilities{
		"ws2019": {APIV2: true, RemoteSubnet: true, DSR: true},
		"ws2022": {APIV2: true, RemoteSubnet: true, DSR: true, IPv6DualStack: true, SessionAffinity: true},
		"ws2025": {APIV2: true, RemoteSubnet: true, DSR: true, IPv6DualStack: true, SessionAffinity: true, ModifyLoadBalancer: true},
	}
	if diff := cmp.Diff(want, caps); diff != "" {
		t.Errorf("profile capabilities (-want +got):\n%s", diff)
	}
}
