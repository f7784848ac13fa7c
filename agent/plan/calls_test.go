package plan

import (
	"context"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/winproxy/winproxy/agent/apply"
	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/agent/hnsdump"
	"github.com/winproxy/winproxy/agent/ownership"
)

// exampleHost is the host of docs/examples/plan-overlay-dsr.yaml as a simulator: the vxlan0
// network, its routes and the two local pods. kubeProxy adds the load balancer kube-proxy left for
// shop/web's ClusterIP (another backend set), and one for a frontend winproxy does not program.
func exampleHost(t testing.TB, kubeProxy bool) (*sim.Sim, hnsdump.Host) {
	t.Helper()
	s := sim.MustNew(sim.WithProfile(sim.WS2022))
	ip, prefix := netip.MustParseAddr, netip.MustParsePrefix
	if _, err := s.AddNetwork(hns.Network{Name: "vxlan0", Type: hns.NetworkTypeOverlay, RemoteSubnetRoutes: []hns.RemoteSubnetRoute{
		{DestinationPrefix: prefix("10.244.2.0/24"), ProviderAddress: ip("10.0.0.12")},
		{DestinationPrefix: prefix("10.244.3.0/24"), ProviderAddress: ip("10.0.0.13")},
	}}); err != nil {
		t.Fatal(err)
	}
	web, _ := s.AddLocalEndpoint("vxlan0", "web-7d9f-abc", ip("10.244.1.10"))
	if _, err := s.AddLocalEndpoint("vxlan0", "api-5c4b-def", ip("10.244.1.11")); err != nil {
		t.Fatal(err)
	}
	if kubeProxy {
		for _, vip := range []string{"10.96.10.10", "10.96.99.99"} {
			if _, err := s.AddLoadBalancer(hns.LoadBalancer{FrontendVIPs: []netip.Addr{ip(vip)}, BackendEndpointIDs: []string{web.ID},
				PortMapping: hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 8080, ExternalPort: 80}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s, hnsdump.Host{HNSVersion: "13.3", WindowsBuild: "20348",
		Interfaces: []hnsdump.Interface{{MAC: "00-15-5D-01-02-03", IPs: []netip.Addr{ip("10.0.0.11")}}}}
}

// dumpOf dumps the simulated host as `hns dump --network vxlan0 -o json` would.
func dumpOf(t testing.TB, s *sim.Sim, host hnsdump.Host, ledger *ownership.Ledger) *hnsdump.Dump {
	t.Helper()
	ctx := context.Background()
	n, _ := s.GetNetworkByName(ctx, "vxlan0")
	lbs, _ := s.ListLoadBalancers(ctx)
	eps, _ := s.ListEndpoints(ctx, n.ID)
	return hnsdump.New(host, []hns.Network{n}, lbs, eps, ownership.NewOwned(s, ledger))
}

// exampleWithDump is the documented example with the host given as a dump instead.
func exampleWithDump(t testing.TB, d *hnsdump.Dump) *File {
	t.Helper()
	data, err := os.ReadFile("../../docs/examples/plan-overlay-dsr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	f.HNS, f.Dump = Host{}, d
	return f
}

// TestPlanAgainstAKubeProxyHost: on a host kube-proxy programmed, the agent's create of a frontend
// a foreign load balancer holds is refused; it then replaces that load balancer, as kube-proxy
// does, creates the rest, and leaves the other foreign one and the pods' endpoints alone.
func TestPlanAgainstAKubeProxyHost(t *testing.T) {
	s, host := exampleHost(t, true)
	ledger, _ := ownership.OpenLedger("")
	d := dumpOf(t, s, host, ledger)
	p, err := Build(exampleWithDump(t, d))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	var web []string
	for _, c := range p.HNSCalls {
		count[c.Operation]++
		if strings.HasPrefix(c.Object, "TCP/10.96.10.10:80->8080") {
			web = append(web, strings.Join(strings.Fields(c.Operation+" "+c.Reason+" "+c.Owner+" "+strings.Split(c.Error, ":")[0]), " "))
		} else if c.Error != "" {
			t.Errorf("call refused: %+v", c)
		}
	}
	if got := strings.Join(web, ","); got != "CreateLoadBalancer LoadBalancerMissing hns,DeleteLoadBalancer FrontendTaken foreign,CreateLoadBalancer LoadBalancerMissing" {
		t.Errorf("calls for 10.96.10.10:80 = %q; want the create refused, kube-proxy's load balancer deleted, the create again", got)
	}
	if count["DeleteLoadBalancer"] != 1 || count["CreateLoadBalancer"] != len(p.LoadBalancers)+1 || count["ModifyLoadBalancer"] != 0 {
		t.Errorf("calls by operation = %v; want 1 delete, %d creates", count, len(p.LoadBalancers)+1)
	}
	if count["CreateEndpoint"] != len(p.RemoteEndpoints)+1 { // and the source-VIP endpoint
		t.Errorf("%d endpoints created, want %d", count["CreateEndpoint"], len(p.RemoteEndpoints)+1)
	}
	outcomes := map[string]string{}
	for _, o := range p.HostLoadBalancers {
		outcomes[strings.Fields(o.Object)[0]] = o.Owner + " " + o.Outcome
	}
	if outcomes["TCP/10.96.10.10:80->8080(v4)"] != "foreign deleted" || outcomes["TCP/10.96.99.99:80->8080(v4)"] != "foreign left alone" {
		t.Errorf("host load balancers = %v", outcomes)
	}
	for _, o := range p.HostEndpoints {
		if o.Owner != hnsdump.OwnerForeign || o.Outcome != OutcomeLeftAlone {
			t.Errorf("pod endpoint %+v, want foreign and left alone", o)
		}
	}
	var b strings.Builder
	if err := Print(&b, p, "table"); err != nil || !strings.Contains(b.String(), "HNS CALLS AGAINST THE DUMP (") {
		t.Errorf("table (%v):\n%s", err, b.String())
	}
}

// TestPlanAgainstWhatTheAgentProgrammed: once the agent has programmed the host, its dump plans
// no call, every object it created is kept, and an object changed behind its back is repaired.
func TestPlanAgainstWhatTheAgentProgrammed(t *testing.T) {
	ctx := context.Background()
	s, host := exampleHost(t, false)
	ledger, _ := ownership.OpenLedger("")
	f := exampleWithDump(t, dumpOf(t, s, host, ledger))
	in, _, err := f.Input()
	if err != nil {
		t.Fatal(err)
	}
	a := apply.New(s, ledger)
	o, err := a.Observe(ctx, "vxlan0", in.HNS.HostMAC)
	if err != nil {
		t.Fatal(err)
	}
	in.HNS = o.View
	if r, err := a.Apply(ctx, o, engine.Compute(in)); err != nil || r.LBsFailed > 0 {
		t.Fatalf("the agent's sync: %+v, %v", r, err)
	}

	p, err := Build(exampleWithDump(t, dumpOf(t, s, host, ledger)))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.HNSCalls) != 0 {
		t.Errorf("calls against the programmed host: %+v", p.HNSCalls)
	}
	for _, o := range p.HostLoadBalancers {
		if o.Owner != hnsdump.OwnerWinproxy || o.Outcome != OutcomeKept {
			t.Errorf("host load balancer %+v, want winproxy's and kept", o)
		}
	}
	if len(p.HostLoadBalancers) != len(p.LoadBalancers) {
		t.Errorf("%d load balancers on the host, %d planned", len(p.HostLoadBalancers), len(p.LoadBalancers))
	}

	// Someone removes a backend from one of the agent's load balancers: it no longer proves to be
	// the agent's, so the agent's create is refused and it replaces the load balancer.
	lbs, _ := s.ListLoadBalancers(ctx)
	changed := lbs[0]
	changed.BackendEndpointIDs = changed.BackendEndpointIDs[:len(changed.BackendEndpointIDs)-1]
	_ = s.RemoveLoadBalancer(changed.ID)
	if _, err := s.AddLoadBalancer(changed); err != nil {
		t.Fatal(err)
	}
	p, err = Build(exampleWithDump(t, dumpOf(t, s, host, ledger)))
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, c := range p.HNSCalls {
		ops = append(ops, c.Operation+" "+c.Reason+" "+c.Owner)
	}
	if strings.Join(ops, ",") != "CreateLoadBalancer LoadBalancerMissing ,DeleteLoadBalancer FrontendTaken foreign,CreateLoadBalancer LoadBalancerMissing " {
		t.Errorf("calls = %q, want the changed load balancer replaced", ops)
	}
}

func TestPlanRefusesADumpWithoutTheNetwork(t *testing.T) {
	s, host := exampleHost(t, false)
	ledger, _ := ownership.OpenLedger("")
	d := dumpOf(t, s, host, ledger)
	d.Networks = nil
	_, err := Build(exampleWithDump(t, d))
	if err == nil || !strings.Contains(err.Error(), "hns dump --network vxlan0 -o json") {
		t.Errorf("err = %v", err)
	}
	d.Kind = "Pod"
	if _, err := Build(exampleWithDump(t, d)); err == nil || !strings.Contains(err.Error(), "not an hns dump") {
		t.Errorf("err = %v", err)
	}
}
