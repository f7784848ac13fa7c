package main

import (
	"bytes"
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

// TestCleanupRemovesOnlyWhatTheAgentCreated runs `winproxy-agent cleanup` on a simulated host
// holding a pod endpoint, a foreign load balancer and what an agent created.
func TestCleanupRemovesOnlyWhatTheAgentCreated(t *testing.T) {
	ctx := context.Background()
	state := filepath.Join(t.TempDir(), "host.json")
	s, err := sim.New(sim.WithStateFile(state))
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.AddNetwork(hns.Network{Name: "cbr0", Type: hns.NetworkTypeL2Bridge})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := s.AddLocalEndpoint("cbr0", "pod", netip.MustParseAddr("10.244.1.5"))
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := s.AddLoadBalancer(hns.LoadBalancer{
		FrontendVIPs: []netip.Addr{netip.MustParseAddr("10.0.0.50")}, BackendEndpointIDs: []string{pod.ID},
		PortMapping: hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 80, ExternalPort: 80},
	})
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := ownership.OpenLedger(state + ".owned")
	if err != nil {
		t.Fatal(err)
	}
	owned := ownership.NewOwned(s, ledger)
	remote, err := owned.CreateEndpoint(ctx, n.ID, hns.Endpoint{IPs: []netip.Addr{netip.MustParseAddr("10.244.2.5")}, Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owned.CreateLoadBalancer(ctx, hns.LoadBalancer{
		FrontendVIPs: []netip.Addr{netip.MustParseAddr("10.0.0.100")}, BackendEndpointIDs: []string{pod.ID, remote.ID},
		PortMapping: hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 8080, ExternalPort: 80},
	}); err != nil {
		t.Fatal(err)
	}
	_ = ledger.Close()
	_ = s.Close()

	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"cleanup", "--hns=sim", "--hns-sim-state", state})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Deleted 1 load balancers and 1 endpoints") {
		t.Errorf("cleanup said %q", out.String())
	}
	s, err = sim.New(sim.WithStateFile(state))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, _ := s.Snapshot()
	if len(st.LoadBalancers) != 1 || st.LoadBalancers[0].ID != foreign.ID {
		t.Errorf("load balancers left = %v, want only the foreign one", st.LoadBalancers)
	}
	if len(st.Endpoints) != 1 || st.Endpoints[0].ID != pod.ID {
		t.Errorf("endpoints left = %v, want only the pod's", st.Endpoints)
	}
}

// TestCleanupLeavesWhatItCannotProve runs `winproxy-agent cleanup` on a host where the ledger names
// a stranger's load balancer, someone changed one the agent created, a foreign load balancer uses
// one of the agent's endpoints, and the agent left an endpoint on a network its config switched
// away from.
func TestCleanupLeavesWhatItCannotProve(t *testing.T) {
	ctx := context.Background()
	state := filepath.Join(t.TempDir(), "host.json")
	s, err := sim.New(sim.WithStateFile(state), sim.WithProfile(sim.WS2025)) // modifies, for the stranger
	if err != nil {
		t.Fatal(err)
	}
	n, _ := s.AddNetwork(hns.Network{Name: "cbr0", Type: hns.NetworkTypeL2Bridge})
	old, _ := s.AddNetwork(hns.Network{Name: "old", Type: hns.NetworkTypeL2Bridge})
	pod, err := s.AddLocalEndpoint("cbr0", "pod", netip.MustParseAddr("10.244.1.5"))
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := ownership.OpenLedger(state + ".owned")
	if err != nil {
		t.Fatal(err)
	}
	owned := ownership.NewOwned(s, ledger)
	endpoint := func(networkID, ip string) hns.Endpoint {
		ep, err := owned.CreateEndpoint(ctx, networkID, hns.Endpoint{IPs: []netip.Addr{netip.MustParseAddr(ip)}, Remote: true})
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	lb := func(vip string, backends ...string) hns.LoadBalancer {
		return hns.LoadBalancer{FrontendVIPs: []netip.Addr{netip.MustParseAddr(vip)}, BackendEndpointIDs: backends,
			PortMapping: hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 8080, ExternalPort: 80}}
	}
	usedByChanged, usedByForeign := endpoint(n.ID, "10.244.2.5"), endpoint(n.ID, "10.244.2.6")
	endpoint(old.ID, "10.244.3.7") // deleted
	forged, err := s.AddLoadBalancer(lb("10.0.0.50", pod.ID))
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := s.AddLoadBalancer(lb("10.0.0.51", usedByForeign.ID))
	if err != nil {
		t.Fatal(err)
	}
	changed, err := owned.CreateLoadBalancer(ctx, lb("10.0.0.100", pod.ID, usedByChanged.ID))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owned.CreateLoadBalancer(ctx, lb("10.0.0.101", pod.ID)); err != nil {
		t.Fatal(err)
	}
	changed.PortMapping.InternalPort = 9090
	if _, err := s.ModifyLoadBalancer(ctx, changed.ID, changed); err != nil {
		t.Fatal(err)
	}
	_ = ledger.Close()
	_ = s.Close()
	f, _ := os.OpenFile(state+".owned", os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("+L " + forged.ID + "\n")
	f.Close()

	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"cleanup", "--hns=sim", "--hns-sim-state", state})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Deleted 1 load balancers and 1 endpoints", "Left 2 load balancers", forged.ID, changed.ID, "Left 2 winproxy-agent endpoints"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("cleanup said %q; want it to contain %q", out.String(), want)
		}
	}
	s, err = sim.New(sim.WithStateFile(state))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, _ := s.Snapshot()
	var lbs, eps []string
	for _, x := range st.LoadBalancers {
		lbs = append(lbs, x.ID)
	}
	for _, x := range st.Endpoints {
		eps = append(eps, x.ID)
	}
	if diff := cmp.Diff([]string{forged.ID, foreign.ID, changed.ID}, lbs); diff != "" {
		t.Errorf("load balancers left (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{pod.ID, usedByChanged.ID, usedByForeign.ID}, eps); diff != "" {
		t.Errorf("endpoints left (-want +got):\n%s", diff)
	}
}
