package sim_test

import (
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
				hnstest.Run(t, hnstest.SimFixture(p, typ, func(_ *testing.T, s *sim.Sim) hns.Client { return s }))
			})
		}
	}
}
