package hnsdump

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/winproxy/winproxy/agent/hns"
)

func TestLoadBalancers(t *testing.T) {
	eps := []hns.Endpoint{
		{ID: "ep-1", IPs: []netip.Addr{netip.MustParseAddr("10.244.1.5")}},
		{ID: "ep-2", IPs: []netip.Addr{netip.MustParseAddr("10.244.2.5")}, Remote: true},
	}
	lbs := []hns.LoadBalancer{
		{ID: "lb-2", PortMapping: hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 8443, ExternalPort: 30443, Flags: hns.PortMappingVipExternalIP | hns.PortMappingLocalRoutedVIP}, SourceVIP: netip.MustParseAddr("10.244.1.2"), BackendEndpointIDs: []string{"EP-2", "ep-9"}},
		{ID: "lb-1", FrontendVIPs: []netip.Addr{netip.MustParseAddr("10.0.0.100")}, PortMapping: hns.PortMapping{Protocol: hns.ProtocolUDP, InternalPort: 8080, ExternalPort: 80, DistributionType: hns.DistributionSourceIP}, Flags: hns.LBFlagDSR, BackendEndpointIDs: []string{"ep-2", "ep-1"}},
	}
	var b strings.Builder
	if err := LoadBalancers(&b, lbs, eps); err != nil {
		t.Fatal(err)
	}
	want := `VIP           PORTS        PROTO  FLAGS  PORT FLAGS                    SOURCE VIP  AFFINITY  BACKENDS
(node ports)  30443->8443  TCP    -      LocalRoutedVIP,VipExternalIP  10.244.1.2  -         10.244.2.5,ep-9?
10.0.0.100    80->8080     UDP    DSR    -                             -           ClientIP  10.244.1.5,10.244.2.5
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table differs (-want +got):\n%s", diff)
	}
}

func TestEndpoints(t *testing.T) {
	var b strings.Builder
	_ = Endpoints(&b, []hns.Endpoint{
		{ID: "r", IPs: []netip.Addr{netip.MustParseAddr("10.244.2.5")}, Remote: true, MAC: "02-11-0a-f4-02-05", ProviderAddress: netip.MustParseAddr("172.20.0.12")},
		{ID: "l", Name: "Calico_ep", IPs: []netip.Addr{netip.MustParseAddr("10.244.1.2")}},
	})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "Calico_ep") || !strings.Contains(lines[2], "172.20.0.12") {
		t.Errorf("unexpected endpoint table:\n%s", b.String())
	}
}
