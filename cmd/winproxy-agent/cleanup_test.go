package main

import (
	"bytes"
	"context"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
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
	ledger, err := hns.OpenLedger(state + ".owned")
	if err != nil {
		t.Fatal(err)
	}
	owned := hns.NewOwned(s, ledger)
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
