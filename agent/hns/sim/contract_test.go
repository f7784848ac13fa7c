package sim_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/hnstest"
	"github.com/winproxy/winproxy/agent/hns/sim"
)

// TestContract holds the simulator to the hns.Client contract for every profile, on both kinds
// of network a Kubernetes CNI creates: L2Bridge (dual-stack where the HNS version has IPv6)
// and Overlay (IPv4 only: docs/design/dataplane.md#dual-stack-and-the-overlay-downgrade).
func TestContract(t *testing.T) {
	for _, p := range sim.Profiles() {
		for _, typ := range []hns.NetworkType{hns.NetworkTypeL2Bridge, hns.NetworkTypeOverlay} {
			t.Run(p.Name+"-"+string(typ), func(t *testing.T) {
				hnstest.Run(t, simFixture(p, typ))
			})
		}
	}
}

// simFixture gives every case a host of its own, with the network the real-HNS fixture would
// create on that release.
func simFixture(p sim.Profile, typ hns.NetworkType) hnstest.Fixture {
	return func(t *testing.T) hnstest.Env {
		s := sim.MustNew(sim.WithProfile(p))
		t.Cleanup(func() { _ = s.Close() })
		n, err := s.AddNetwork(hns.Network{Name: hnstest.NamePrefix + "net", Type: typ})
		if err != nil {
			t.Fatal(err)
		}
		return hnstest.Env{
			Client:       s,
			Network:      n,
			DualStack:    !n.IsOverlay() && p.Capabilities().IPv6DualStack,
			WindowsBuild: p.Build,
			Harness:      simHarness{s: s, network: n},
		}
	}
}

type simHarness struct {
	s       *sim.Sim
	network hns.Network
}

func (h simHarness) AddLocalEndpoint(_ context.Context, name string, ips ...netip.Addr) (hns.Endpoint, error) {
	return h.s.AddLocalEndpoint(h.network.Name, name, ips...)
}

func (h simHarness) RecreateNetwork(context.Context) (hns.Network, error) {
	if err := h.s.RemoveNetwork(h.network.Name); err != nil {
		return hns.Network{}, err
	}
	return h.s.AddNetwork(hns.Network{Name: h.network.Name, Type: h.network.Type})
}
