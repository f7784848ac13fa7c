package sim_test

import (
	"net/netip"
	"testing"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
)

// BenchmarkFirstSyncShape creates what a first overlay sync at N=2000 creates
// (7,001 remote endpoints, 2,000 LBs) to keep the simulator itself cheap
// next to the agent code it measures.
func BenchmarkFirstSyncShape(b *testing.B) {
	for b.Loop() {
		s := sim.MustNew(sim.WithDeterministicIDs())
		n, _ := s.AddNetwork(hns.Network{Name: "vxlan0", Type: hns.NetworkTypeOverlay})
		var ids []string
		for i := range 7001 {
			a := netip.AddrFrom4([4]byte{10, 244, byte(i >> 8), byte(i)})
			ep, err := s.CreateEndpoint(ctx, n.ID, hns.Endpoint{IPs: []netip.Addr{a}, Remote: true})
			if err != nil {
				b.Fatal(err)
			}
			ids = append(ids, ep.ID)
		}
		for i := range 2000 {
			vip := netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)})
			_, err := s.CreateLoadBalancer(ctx, hns.LoadBalancer{FrontendVIPs: []netip.Addr{vip},
				PortMapping: hns.PortMapping{Protocol: 6, InternalPort: 8080, ExternalPort: 80}, BackendEndpointIDs: ids[i*3 : i*3+5]})
			if err != nil {
				b.Fatal(err)
			}
		}
		if _, err := s.ListLoadBalancers(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
