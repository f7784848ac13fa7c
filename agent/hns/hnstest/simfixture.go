package hnstest

import (
	"context"
	"net/netip"
	"testing"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
)

// SimFixture gives every case a simulated host of its own, of profile p, with the network of
// type typ the real-HNS fixture would create on that release, reached through the client that
// reach returns: the simulator itself, or a client in front of it (the one that serves it to
// another process). The harness changes the host directly, as a CNI changes the host's HNS.
func SimFixture(p sim.Profile, typ hns.NetworkType, reach func(*testing.T, *sim.Sim) hns.Client) Fixture {
	return func(t *testing.T) Env {
		s := sim.MustNew(sim.WithProfile(p))
		t.Cleanup(func() { _ = s.Close() })
		n, err := s.AddNetwork(hns.Network{Name: NamePrefix + "net", Type: typ})
		if err != nil {
			t.Fatal(err)
		}
		return Env{
			Client:       reach(t, s),
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
