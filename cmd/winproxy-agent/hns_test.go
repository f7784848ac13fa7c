package main

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/agent/hnsdump"
	"github.com/winproxy/winproxy/agent/ownership"
)

// migratingHost is a simulated host in the middle of a move from kube-proxy: the CNI's network
// and pod endpoint, kube-proxy's load balancer for 10.0.0.100:80 (foreign), and what winproxy's
// agent created: a remote endpoint and a load balancer for 10.0.0.50:80. It returns the state
// file.
func migratingHost(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	state := filepath.Join(t.TempDir(), "host.json")
	s, err := sim.New(sim.WithStateFile(state))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n, err := s.AddNetwork(hns.Network{Name: "cbr0", Type: hns.NetworkTypeL2Bridge})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := s.AddLocalEndpoint("cbr0", "pod-web", netip.MustParseAddr("10.244.1.5"))
	if err != nil {
		t.Fatal(err)
	}
	lb := func(vip string, backends ...string) hns.LoadBalancer {
		return hns.LoadBalancer{FrontendVIPs: []netip.Addr{netip.MustParseAddr(vip)}, BackendEndpointIDs: backends,
			PortMapping: hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 8080, ExternalPort: 80}}
	}
	if _, err := s.AddLoadBalancer(lb("10.0.0.100", pod.ID)); err != nil {
		t.Fatal(err)
	}
	ledger, err := ownership.OpenLedger(state + ".owned")
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	owned := ownership.NewOwned(s, ledger)
	remote, err := owned.CreateEndpoint(ctx, n.ID, hns.Endpoint{IPs: []netip.Addr{netip.MustParseAddr("10.244.2.5")}, Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owned.CreateLoadBalancer(ctx, lb("10.0.0.50", pod.ID, remote.ID)); err != nil {
		t.Fatal(err)
	}
	return state
}

func TestHNSDumpShowsOwners(t *testing.T) {
	state := migratingHost(t)
	journal, _ := os.ReadFile(state + ".owned")

	out, err := runAgent("hns", "dump", "--hns=sim", "--hns-sim-state", state)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"2 load balancers (1 winproxy, 1 foreign), 2 endpoints",
		"foreign    10.0.0.100   80->8080",
		"winproxy   10.0.0.50    80->8080",
		"foreign    pod-web",
		"winproxy   winproxy-10.244.2.5",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}

	out, err = runAgent("hns", "dump", "--hns=sim", "--hns-sim-state", state, "--network", "cbr0", "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := ownersDumped(t, out)
	if len(d.Networks) != 1 || d.Networks[0].Name != "cbr0" || !d.Host.Simulated || d.Host.HNSVersion != "13.3" {
		t.Errorf("networks %v, host %+v", d.Networks, d.Host)
	}
	if after, _ := os.ReadFile(state + ".owned"); string(after) != string(journal) {
		t.Errorf("dump changed the ledger:\n%s\nwas:\n%s", after, journal)
	}

	if _, err := runAgent("hns", "dump", "--hns=sim", "--hns-sim-state", state, "-o", "wide"); err == nil {
		t.Error("-o wide accepted")
	}
	if _, err := runAgent("hns", "dump", "--hns=sim", "--hns-sim-state", state, "--network", "vxlan0"); err == nil {
		t.Error("a missing network accepted")
	}
}

// HNS names are whatever their creator made them: an escape sequence in one is printed as text,
// never sent to the terminal.
func TestHNSDumpEscapesControlBytes(t *testing.T) {
	state := filepath.Join(t.TempDir(), "host.json")
	s, err := sim.New(sim.WithStateFile(state))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddNetwork(hns.Network{Name: "cbr0", Type: hns.NetworkTypeL2Bridge}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddLocalEndpoint("cbr0", "evil\x1b]0;pwned\x07\x1b[2J\u009b", netip.MustParseAddr("10.244.1.5")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	out, err := runAgent("hns", "dump", "--hns=sim", "--hns-sim-state", state)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(out, "\x1b\x07\u009b") {
		t.Errorf("the table carries control bytes:\n%q", out)
	}
	// kubectl's table printer writes ESC as ^[; the other control bytes are escaped on the way out.
	if want := `evil^[]0;pwned\x07^[[2J\u009b`; !strings.Contains(out, want) {
		t.Errorf("the table lacks the escaped name %s:\n%s", want, out)
	}
}

// ownersDumped reads `hns dump -o yaml` of the host migratingHost makes and checks that it tells
// the foreign load balancer (10.0.0.100) from winproxy's (10.0.0.50).
func ownersDumped(t *testing.T, out string) hnsdump.Dump {
	t.Helper()
	var d hnsdump.Dump
	if err := yaml.UnmarshalStrict([]byte(out), &d); err != nil {
		t.Fatalf("-o yaml: %v\n%s", err, out)
	}
	owners := map[string]string{}
	for _, lb := range d.LoadBalancers {
		owners[lb.VIP().String()] = lb.Owner
	}
	if owners["10.0.0.100"] != hnsdump.OwnerForeign || owners["10.0.0.50"] != hnsdump.OwnerWinproxy {
		t.Errorf("owners by VIP = %v", owners)
	}
	return d
}
