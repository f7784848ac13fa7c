package hnsdump

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"

	"github.com/winproxy/winproxy/agent/hns"
)

// owners proves ownership by ID, standing in for ownership.Owned.
type owners map[string]bool

func (o owners) OwnsLoadBalancer(lb hns.LoadBalancer) bool { return o[lb.ID] }
func (o owners) OwnsEndpoint(ep hns.Endpoint) bool         { return o[ep.ID] }

// addrs compares addresses by value.
var addrs = cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{})

func sampleDump() *Dump {
	ip := netip.MustParseAddr
	eps := []hns.Endpoint{
		{ID: "EP-R", Name: "winproxy-10.244.2.5", NetworkID: "NET", IPs: []netip.Addr{ip("10.244.2.5")}, Remote: true, MAC: "02-11-0a-f4-02-05", ProviderAddress: ip("172.20.0.12")},
		{ID: "EP-L", Name: "pod-1", NetworkID: "NET", IPs: []netip.Addr{ip("10.244.1.5")}},
	}
	lbs := []hns.LoadBalancer{
		{ID: "LB-MINE", FrontendVIPs: []netip.Addr{ip("10.0.0.100")}, Flags: hns.LBFlagDSR, SourceVIP: ip("10.244.1.2"),
			PortMapping: hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 8080, ExternalPort: 80}, BackendEndpointIDs: []string{"ep-l", "EP-R"}},
		{ID: "LB-KP", FrontendVIPs: []netip.Addr{ip("10.0.0.50")},
			PortMapping: hns.PortMapping{Protocol: hns.ProtocolUDP, InternalPort: 53, ExternalPort: 53}, BackendEndpointIDs: []string{"EP-L"}},
	}
	networks := []hns.Network{{ID: "NET", Name: "Calico", Type: hns.NetworkTypeOverlay,
		RemoteSubnetRoutes: []hns.RemoteSubnetRoute{{DestinationPrefix: netip.MustParsePrefix("10.244.2.0/24"), ProviderAddress: ip("172.20.0.12")}}}}
	host := Host{HNSVersion: "13.3", WindowsBuild: "20348", Interfaces: []Interface{{MAC: "00-15-5D-01-02-03", IPs: []netip.Addr{ip("172.20.0.11")}}}}
	return New(host, networks, lbs, eps, owners{"LB-MINE": true, "EP-R": true})
}

func TestDumpTable(t *testing.T) {
	var b strings.Builder
	if err := Print(&b, sampleDump(), "table"); err != nil {
		t.Fatal(err)
	}
	want := `HNS 13.3, Windows build 20348: 2 load balancers (1 winproxy, 1 foreign), 2 endpoints

ID        OWNER      VIP          PORTS      PROTO   FLAGS   PORT FLAGS   SOURCE VIP   AFFINITY   BACKENDS
LB-KP     foreign    10.0.0.50    53->53     UDP     -       -            -            -          10.244.1.5
LB-MINE   winproxy   10.0.0.100   80->8080   TCP     DSR     -            10.244.1.2   -          10.244.1.5,10.244.2.5

ID     OWNER      NAME                  IPS          KIND     MAC                 PROVIDER ADDRESS
EP-L   foreign    pod-1                 10.244.1.5   local    -                   -
EP-R   winproxy   winproxy-10.244.2.5   10.244.2.5   remote   02-11-0a-f4-02-05   172.20.0.12
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table differs (-want +got):\n%s", diff)
	}
}

// TestDumpRoundTrips reads back what -o json and -o yaml print: plan --hns depends on it.
func TestDumpRoundTrips(t *testing.T) {
	d := sampleDump()
	for _, format := range []string{"json", "yaml"} {
		var b strings.Builder
		if err := Print(&b, d, format); err != nil {
			t.Fatal(err)
		}
		var got Dump
		if err := yaml.UnmarshalStrict([]byte(b.String()), &got); err != nil {
			t.Fatalf("-o %s: %v\n%s", format, err, b.String())
		}
		if diff := cmp.Diff(d, &got, addrs); diff != "" {
			t.Errorf("-o %s does not round-trip (-printed +read):\n%s", format, diff)
		}
	}
	var b strings.Builder
	_ = Print(&b, d, "json")
	var raw map[string]any
	_ = json.Unmarshal([]byte(b.String()), &raw)
	if raw["apiVersion"] != APIVersion || raw["kind"] != Kind {
		t.Errorf("-o json: apiVersion %v, kind %v", raw["apiVersion"], raw["kind"])
	}
	if lb := raw["loadBalancers"].([]any)[0].(map[string]any); lb["id"] != "LB-KP" || lb["owner"] != OwnerForeign {
		t.Errorf("-o json: a load balancer's fields are not inline with its owner: %v", lb)
	}
	if err := Print(&b, d, "wide"); err == nil {
		t.Error("-o wide accepted")
	}
}

func TestDumpDeepCopy(t *testing.T) {
	d := sampleDump()
	c := d.DeepCopyObject().(*Dump)
	if diff := cmp.Diff(d, c, addrs); diff != "" {
		t.Fatalf("copy differs:\n%s", diff)
	}
	c.LoadBalancers[0].BackendEndpointIDs[0] = "X"
	c.Endpoints[0].IPs[0] = netip.Addr{}
	c.Networks[0].RemoteSubnetRoutes[0].ProviderAddress = netip.Addr{}
	c.Host.Interfaces[0].IPs[0] = netip.Addr{}
	if diff := cmp.Diff(sampleDump(), d, addrs); diff != "" {
		t.Errorf("changing the copy changed the original:\n%s", diff)
	}
}

func TestDumpHostMAC(t *testing.T) {
	d := sampleDump()
	if got := d.HostMAC(netip.MustParseAddr("172.20.0.11")); got != "00-15-5D-01-02-03" {
		t.Errorf("HostMAC of the interface's address = %q", got)
	}
	if got := d.HostMAC(netip.MustParseAddr("172.20.0.99")); got != "" {
		t.Errorf("HostMAC of an address no interface holds = %q, want none", got)
	}
	d.Host.Simulated = true
	if got := d.HostMAC(netip.MustParseAddr("172.20.0.99")); got == "" {
		t.Error("a simulated host has no MAC for its node IP")
	}
	if v, err := d.Version(); err != nil || v != (hns.Version{Major: 13, Minor: 3}) {
		t.Errorf("Version() = %v, %v", v, err)
	}
	d.Host.HNSVersion = "13"
	if _, err := d.Version(); err == nil {
		t.Error("version 13 accepted")
	}
}
