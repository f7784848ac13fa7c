package sim_test

import (
	"context"
	"errors"
	"net/netip"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
)

var (
	ctx      = context.Background()
	addrOpts = cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{})
)

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

// fixture is a host with one overlay network and two local pods.
type fixture struct {
	s          *sim.Sim
	net        hns.Network
	pod1, pod2 hns.Endpoint
}

func newFixture(t *testing.T, p sim.Profile) fixture {
	t.Helper()
	s, err := sim.New(sim.WithProfile(p), sim.WithDeterministicIDs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	n, err := s.AddNetwork(hns.Network{Name: "vxlan0", Type: hns.NetworkTypeOverlay, RemoteSubnetRoutes: []hns.RemoteSubnetRoute{
		{DestinationPrefix: netip.MustParsePrefix("10.244.2.0/24"), ProviderAddress: ip("10.0.0.3"), IsolationID: 4096, DistributedRouterMAC: "00-11-22-33-44-55"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	p1, err := s.AddLocalEndpoint("vxlan0", "pod1", ip("10.244.1.10"))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := s.AddLocalEndpoint("vxlan0", "pod2", ip("10.244.1.11"), ip("fd00::11"))
	if err != nil {
		t.Fatal(err)
	}
	return fixture{s: s, net: n, pod1: p1, pod2: p2}
}

func clusterIPLB(f fixture) hns.LoadBalancer {
	return hns.LoadBalancer{
		FrontendVIPs:       []netip.Addr{ip("10.96.0.10")},
		PortMapping:        hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 8080, ExternalPort: 80},
		SourceVIP:          ip("10.244.1.2"),
		BackendEndpointIDs: []string{f.pod1.ID, f.pod2.ID},
	}
}

func TestIDs(t *testing.T) {
	f := newFixture(t, sim.WS2022)
	for i, id := range []string{f.net.ID, f.pod1.ID, f.pod2.ID} {
		want := []string{"00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002", "00000000-0000-0000-0000-000000000003"}[i]
		if id != want {
			t.Errorf("id %d = %s, want %s", i, id, want)
		}
	}
	r := sim.MustNew()
	n, err := r.AddNetwork(hns.Network{Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	guid := regexp.MustCompile(`^[0-9A-F]{8}-[0-9A-F]{4}-4[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}$`)
	if !guid.MatchString(n.ID) {
		t.Errorf("random ID %q is not an upper-case v4 GUID", n.ID)
	}
}

func TestEndpoints(t *testing.T) {
	f := newFixture(t, sim.WS2022)
	remote := hns.Endpoint{Name: "winproxy-10.244.2.5", IPs: []netip.Addr{ip("10.244.2.5")}, MAC: hns.ConjureMAC(ip("10.244.2.5")), Remote: true, ProviderAddress: ip("10.0.0.3")}
	got, err := f.s.CreateEndpoint(ctx, f.net.ID, remote)
	if err != nil {
		t.Fatal(err)
	}
	want := remote
	want.ID, want.NetworkID = "00000000-0000-0000-0000-000000000004", f.net.ID
	if diff := cmp.Diff(want, got, addrOpts); diff != "" {
		t.Errorf("created (-want +got):\n%s", diff)
	}
	list, err := f.s.ListEndpoints(ctx, f.net.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]hns.Endpoint{f.pod1, f.pod2, want}, list, addrOpts); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	if l, err := f.s.ListEndpoints(ctx, "no-such-network"); err != nil || len(l) != 0 {
		t.Errorf("unknown network: %v %v, want empty, nil", l, err)
	}
	byName, err := f.s.GetEndpointByName(ctx, "pod2")
	if err != nil || byName.ID != f.pod2.ID {
		t.Errorf("GetEndpointByName = %v, %v", byName, err)
	}
	n, err := f.s.GetNetworkByName(ctx, "vxlan0")
	if diff := cmp.Diff(f.net, n, addrOpts); err != nil || diff != "" {
		t.Errorf("GetNetworkByName err=%v diff:\n%s", err, diff)
	}
	if err := f.s.DeleteEndpoint(ctx, got.ID); err != nil {
		t.Fatal(err)
	}

	errTests := []struct {
		name  string
		run   func() error
		check func(error) bool
	}{
		{"network by name", func() error { _, err := f.s.GetNetworkByName(ctx, "nope"); return err }, isErr(hns.ErrNetworkNotFound)},
		{"endpoint by name", func() error { _, err := f.s.GetEndpointByName(ctx, "nope"); return err }, isErr(hns.ErrEndpointNotFound)},
		{"delete twice", func() error { return f.s.DeleteEndpoint(ctx, got.ID) }, isErr(hns.ErrEndpointNotFound)},
		{"create on missing network", func() error {
			_, err := f.s.CreateEndpoint(ctx, "nope", hns.Endpoint{IPs: []netip.Addr{ip("10.244.2.6")}, Remote: true})
			return err
		}, isErr(hns.ErrNetworkNotFound)},
		{"invalid ip", func() error {
			_, err := f.s.CreateEndpoint(ctx, f.net.ID, hns.Endpoint{IPs: []netip.Addr{{}}, Remote: true})
			return err
		}, hns.IsInvalidIP},
		{"two IPv4", func() error {
			_, err := f.s.CreateEndpoint(ctx, f.net.ID, hns.Endpoint{IPs: []netip.Addr{ip("10.244.2.7"), ip("10.244.2.8")}, Remote: true})
			return err
		}, hns.IsInvalidIP},
		{"case-insensitive ID", func() error { return f.s.DeleteEndpoint(ctx, "00000000-0000-0000-0000-00000000000a") }, isErr(hns.ErrEndpointNotFound)},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); !tt.check(err) {
				t.Errorf("got %v", err)
			}
		})
	}
}

func isErr(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

func TestDuplicateIPQuirk(t *testing.T) {
	tests := []struct {
		profile         sim.Profile
		remoteSameIP    bool // remote endpoint with a local pod's IP
		localSameIP     bool // second local endpoint with the same IP
		localOverRemote bool // local endpoint (CNI) with a remote endpoint's IP
	}{
		{sim.WS2019, true, false, true},
		{sim.WS2022, true, false, true},
		{sim.WS2025, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.profile.Name, func(t *testing.T) {
			f := newFixture(t, tt.profile)
			_, err := f.s.CreateEndpoint(ctx, f.net.ID, hns.Endpoint{IPs: []netip.Addr{ip("10.244.1.10")}, Remote: true})
			if got := err == nil; got != tt.remoteSameIP || (err != nil && !hns.IsPortExists(err)) {
				t.Errorf("remote with local's IP: err=%v, want allowed=%v", err, tt.remoteSameIP)
			}
			_, err = f.s.AddLocalEndpoint("vxlan0", "pod1-again", ip("10.244.1.10"))
			if got := err == nil; got != tt.localSameIP || !hns.IsPortExists(err) {
				t.Errorf("second local with same IP: err=%v, want allowed=%v", err, tt.localSameIP)
			}
			if _, err := f.s.CreateEndpoint(ctx, f.net.ID, hns.Endpoint{IPs: []netip.Addr{ip("10.244.2.9")}, Remote: true}); err != nil {
				t.Fatal(err)
			}
			_, err = f.s.AddLocalEndpoint("vxlan0", "pod3", ip("10.244.2.9"))
			if got := err == nil; got != tt.localOverRemote {
				t.Errorf("local over remote IP: err=%v, want allowed=%v", err, tt.localOverRemote)
			}
		})
	}
}

func TestLoadBalancerCRUD(t *testing.T) {
	f := newFixture(t, sim.WS2025)
	lb, err := f.s.CreateLoadBalancer(ctx, clusterIPLB(f))
	if err != nil {
		t.Fatal(err)
	}
	want := clusterIPLB(f)
	want.ID = "00000000-0000-0000-0000-000000000004"
	if diff := cmp.Diff(want, lb, addrOpts); diff != "" {
		t.Errorf("create (-want +got):\n%s", diff)
	}
	got, err := f.s.GetLoadBalancer(ctx, lb.ID)
	if diff := cmp.Diff(want, got, addrOpts); err != nil || diff != "" {
		t.Errorf("get err=%v (-want +got):\n%s", err, diff)
	}
	nodePort := hns.LoadBalancer{PortMapping: hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 8080, ExternalPort: 30080, Flags: hns.PortMappingLocalRoutedVIP | hns.PortMappingVipExternalIP}, BackendEndpointIDs: []string{f.pod1.ID}}
	np, err := f.s.CreateLoadBalancer(ctx, nodePort)
	if err != nil {
		t.Fatal(err)
	}
	mod := want
	mod.BackendEndpointIDs = []string{f.pod2.ID}
	mod.Flags = hns.LBFlagDSR
	m, err := f.s.ModifyLoadBalancer(ctx, lb.ID, mod)
	if diff := cmp.Diff(mod, m, addrOpts); err != nil || diff != "" {
		t.Errorf("modify err=%v (-want +got):\n%s", err, diff)
	}
	list, err := f.s.ListLoadBalancers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	np.ID = "00000000-0000-0000-0000-000000000005"
	if diff := cmp.Diff([]hns.LoadBalancer{mod, np}, list, addrOpts); diff != "" {
		t.Errorf("list keeps creation order after modify (-want +got):\n%s", diff)
	}
	if err := f.s.DeleteLoadBalancer(ctx, lb.ID); err != nil {
		t.Fatal(err)
	}
	// The frontend is free again.
	if _, err := f.s.CreateLoadBalancer(ctx, clusterIPLB(f)); err != nil {
		t.Errorf("re-create after delete: %v", err)
	}
}

func TestLoadBalancerErrors(t *testing.T) {
	v6LB := func(f fixture) hns.LoadBalancer {
		return hns.LoadBalancer{FrontendVIPs: []netip.Addr{ip("fd00:96::10")}, Flags: hns.LBFlagIPv6,
			PortMapping: hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 8080, ExternalPort: 80}, BackendEndpointIDs: []string{f.pod2.ID}}
	}
	tests := []struct {
		name    string
		profile sim.Profile
		lb      func(f fixture) hns.LoadBalancer
		check   func(error) bool
	}{
		{"same tuple", sim.WS2022, clusterIPLB, hns.IsPortExists},
		{"same tuple other backends and flags", sim.WS2022, func(f fixture) hns.LoadBalancer {
			lb := clusterIPLB(f)
			lb.BackendEndpointIDs, lb.Flags, lb.SourceVIP = []string{f.pod1.ID}, hns.LBFlagDSR, netip.Addr{}
			return lb
		}, hns.IsPortExists},
		{"other external port", sim.WS2022, func(f fixture) hns.LoadBalancer {
			lb := clusterIPLB(f)
			lb.PortMapping.ExternalPort = 81
			return lb
		}, noErr},
		{"other internal port", sim.WS2022, func(f fixture) hns.LoadBalancer {
			lb := clusterIPLB(f)
			lb.PortMapping.InternalPort = 9090
			return lb
		}, noErr},
		{"other protocol", sim.WS2022, func(f fixture) hns.LoadBalancer {
			lb := clusterIPLB(f)
			lb.PortMapping.Protocol = hns.ProtocolUDP
			return lb
		}, noErr},
		{"other VIP", sim.WS2022, func(f fixture) hns.LoadBalancer {
			lb := clusterIPLB(f)
			lb.FrontendVIPs = []netip.Addr{ip("10.96.0.11")}
			return lb
		}, noErr},
		{"IPv6 same ports", sim.WS2022, v6LB, noErr},
		{"IPv6 flag with IPv4 VIP", sim.WS2022, func(f fixture) hns.LoadBalancer {
			lb := clusterIPLB(f)
			lb.PortMapping.ExternalPort, lb.Flags = 82, hns.LBFlagIPv6
			return lb
		}, hns.IsInvalidIP},
		{"zero VIP", sim.WS2022, func(f fixture) hns.LoadBalancer {
			lb := clusterIPLB(f)
			lb.FrontendVIPs = []netip.Addr{{}}
			return lb
		}, hns.IsInvalidIP},
		{"unknown backend", sim.WS2022, func(f fixture) hns.LoadBalancer {
			lb := clusterIPLB(f)
			lb.PortMapping.ExternalPort, lb.BackendEndpointIDs = 83, []string{"DEAD"}
			return lb
		}, isErr(hns.ErrEndpointNotFound)},
		{"IPv6 on ws2019", sim.WS2019, v6LB, hns.IsNotImplemented},
		{"affinity on ws2019", sim.WS2019, func(f fixture) hns.LoadBalancer {
			lb := clusterIPLB(f)
			lb.PortMapping.ExternalPort, lb.PortMapping.DistributionType = 84, hns.DistributionSourceIP
			return lb
		}, hns.IsNotImplemented},
		{"DSR without DSR support", sim.Profile{Name: "hns9.2", Version: hns.Version{Major: 9, Minor: 2}}, func(f fixture) hns.LoadBalancer {
			lb := clusterIPLB(f)
			lb.PortMapping.ExternalPort, lb.Flags = 85, hns.LBFlagDSR
			return lb
		}, hns.IsNotImplemented},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.profile)
			if _, err := f.s.CreateLoadBalancer(ctx, clusterIPLB(f)); err != nil {
				t.Fatal(err)
			}
			_, err := f.s.CreateLoadBalancer(ctx, tt.lb(f))
			if !tt.check(err) {
				t.Errorf("create: got %v", err)
			}
		})
	}
}

func noErr(err error) bool { return err == nil }

func TestModifyAndNotFound(t *testing.T) {
	tests := []struct {
		profile     sim.Profile
		modifyWorks bool
	}{
		{sim.WS2019, false},
		{sim.WS2022, false},
		{sim.WS2025, true},
		{sim.Profile{Name: "hns15.4", Version: hns.Version{Major: 15, Minor: 4}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.profile.Name, func(t *testing.T) {
			f := newFixture(t, tt.profile)
			lb, err := f.s.CreateLoadBalancer(ctx, clusterIPLB(f))
			if err != nil {
				t.Fatal(err)
			}
			mod := clusterIPLB(f)
			mod.BackendEndpointIDs = []string{f.pod1.ID}
			_, err = f.s.ModifyLoadBalancer(ctx, lb.ID, mod)
			if tt.modifyWorks != (err == nil) || (err != nil && !hns.IsNotImplemented(err)) {
				t.Errorf("modify: %v, want works=%v", err, tt.modifyWorks)
			}
			if err != nil && !regexp.MustCompile(`0x80004001`).MatchString(err.Error()) {
				t.Errorf("E_NOTIMPL text missing: %v", err)
			}
			// Not found whatever the version: hcsshim opens the LB before modifying it.
			if _, err := f.s.ModifyLoadBalancer(ctx, "MISSING", mod); !errors.Is(err, hns.ErrLoadBalancerNotFound) {
				t.Errorf("modify missing: %v", err)
			}
			if _, err := f.s.GetLoadBalancer(ctx, "MISSING"); !errors.Is(err, hns.ErrLoadBalancerNotFound) {
				t.Errorf("get missing: %v", err)
			}
			if err := f.s.DeleteLoadBalancer(ctx, "MISSING"); !hns.IsNotFound(err) {
				t.Errorf("delete missing: %v", err)
			}
		})
	}
}

func TestModifyConflict(t *testing.T) {
	f := newFixture(t, sim.WS2025)
	a, _ := f.s.CreateLoadBalancer(ctx, clusterIPLB(f))
	other := clusterIPLB(f)
	other.PortMapping.ExternalPort = 443
	b, err := f.s.CreateLoadBalancer(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.ModifyLoadBalancer(ctx, b.ID, clusterIPLB(f)); !hns.IsPortExists(err) {
		t.Errorf("modify onto a's frontend: %v", err)
	}
	// Modifying a to its own frontend is fine.
	if _, err := f.s.ModifyLoadBalancer(ctx, a.ID, clusterIPLB(f)); err != nil {
		t.Errorf("modify in place: %v", err)
	}
}

func TestHNSNotRunning(t *testing.T) {
	f := newFixture(t, sim.WS2025)
	lb, _ := f.s.CreateLoadBalancer(ctx, clusterIPLB(f))
	if err := f.s.SetHNSRunning(false); err != nil {
		t.Fatal(err)
	}
	calls := map[sim.Op]func() error{
		sim.OpVersion:            func() error { _, err := f.s.Version(ctx); return err },
		sim.OpGetNetworkByName:   func() error { _, err := f.s.GetNetworkByName(ctx, "vxlan0"); return err },
		sim.OpListEndpoints:      func() error { _, err := f.s.ListEndpoints(ctx, f.net.ID); return err },
		sim.OpGetEndpointByName:  func() error { _, err := f.s.GetEndpointByName(ctx, "pod1"); return err },
		sim.OpCreateEndpoint:     func() error { _, err := f.s.CreateEndpoint(ctx, f.net.ID, hns.Endpoint{Remote: true}); return err },
		sim.OpDeleteEndpoint:     func() error { return f.s.DeleteEndpoint(ctx, f.pod1.ID) },
		sim.OpListLoadBalancers:  func() error { _, err := f.s.ListLoadBalancers(ctx); return err },
		sim.OpGetLoadBalancer:    func() error { _, err := f.s.GetLoadBalancer(ctx, lb.ID); return err },
		sim.OpCreateLoadBalancer: func() error { _, err := f.s.CreateLoadBalancer(ctx, clusterIPLB(f)); return err },
		sim.OpModifyLoadBalancer: func() error { _, err := f.s.ModifyLoadBalancer(ctx, lb.ID, clusterIPLB(f)); return err },
		sim.OpDeleteLoadBalancer: func() error { return f.s.DeleteLoadBalancer(ctx, lb.ID) },
	}
	for op, call := range calls {
		t.Run(string(op), func(t *testing.T) {
			err := call()
			if !hns.IsHNSNotRunning(err) || hns.IsNotFound(err) || !regexp.MustCompile(`0x6b5`).MatchString(err.Error()) {
				t.Errorf("got %v, want 0x6b5 not-running", err)
			}
		})
	}
	if err := f.s.SetHNSRunning(true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.GetLoadBalancer(ctx, lb.ID); err != nil {
		t.Errorf("after restart, LB lost: %v", err)
	}
}

func TestCounts(t *testing.T) {
	f := newFixture(t, sim.WS2022)
	if got := f.s.Counts(); got.Total() != 0 {
		t.Errorf("helpers were counted: %+v", got)
	}
	f.s.Version(ctx)
	f.s.ListEndpoints(ctx, f.net.ID)
	lb, _ := f.s.CreateLoadBalancer(ctx, clusterIPLB(f))
	f.s.CreateLoadBalancer(ctx, clusterIPLB(f)) // port exists
	f.s.ModifyLoadBalancer(ctx, lb.ID, lb)      // not implemented on ws2022
	f.s.DeleteLoadBalancer(ctx, lb.ID)
	want := sim.Counts{
		Calls:  map[sim.Op]int{sim.OpVersion: 1, sim.OpListEndpoints: 1, sim.OpCreateLoadBalancer: 2, sim.OpModifyLoadBalancer: 1, sim.OpDeleteLoadBalancer: 1},
		Failed: map[sim.Op]int{sim.OpCreateLoadBalancer: 1, sim.OpModifyLoadBalancer: 1},
		Reads:  2, Writes: 4, Failures: 2,
		// Through hcsshim: the version 1, the list of the fixture's 2 endpoints 1 + 2×3, two
		// creates 3 each, the modify 4, the delete 1.
		HCN: 19,
	}
	if diff := cmp.Diff(want, f.s.Counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	f.s.Reset()
	if diff := cmp.Diff(sim.Counts{Calls: map[sim.Op]int{}, Failed: map[sim.Op]int{}}, f.s.Counts()); diff != "" {
		t.Errorf("after reset (-want +got):\n%s", diff)
	}
}

func TestRemoveNetwork(t *testing.T) {
	f := newFixture(t, sim.WS2022)
	lb, err := f.s.CreateLoadBalancer(ctx, clusterIPLB(f))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.RemoveNetwork("vxlan0"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.GetNetworkByName(ctx, "vxlan0"); !hns.IsNotFound(err) {
		t.Errorf("network still found: %v", err)
	}
	if _, err := f.s.GetEndpointByName(ctx, "pod1"); !hns.IsNotFound(err) {
		t.Errorf("the network's endpoints survived it: %v", err)
	}
	if _, err := f.s.GetLoadBalancer(ctx, lb.ID); err != nil {
		t.Errorf("load balancers go only when deleted: %v", err)
	}
	// The CNI creates it again, with a new ID.
	n, err := f.s.AddNetwork(hns.Network{Name: "vxlan0", Type: hns.NetworkTypeOverlay})
	if err != nil || n.ID == f.net.ID {
		t.Errorf("recreated network %+v, %v; want a new ID", n, err)
	}
	if err := f.s.RemoveNetwork("nope"); !hns.IsNotFound(err) {
		t.Errorf("removing a missing network: %v", err)
	}
}
