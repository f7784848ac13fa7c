package engine_test

import (
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/engine/enginetest"
	"github.com/winproxy/winproxy/agent/hns"
)

// ws2022 is the host of the benchmarks: HNS 13.3, no LB modify.
var ws2022 = hns.CapabilitiesFor(hns.Version{Major: 13, Minor: 3})

// BenchmarkCompute10kServices is the engine's full computation of
// enginetest.Large: what a restarted agent does once.
func BenchmarkCompute10kServices(b *testing.B) {
	cl := enginetest.Large()
	in := cl.Input(cl.View(ws2022))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		engine.Compute(in)
	}
}

// BenchmarkCacheOneEndpointChange10kServices is the incremental
// recomputation after one endpoint change: a remote backend of one service
// moves to another node and back, one move per op.
func BenchmarkCacheOneEndpointChange10kServices(b *testing.B) {
	cl := enginetest.Large()
	c := cl.Cache()
	c.SetNode(cl.NodeName, cl.Config, nil, nil, cl.View(ws2022))
	c.Desired()
	orig, moved := movedEndpoint(cl)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			c.SetEndpointSlice(moved)
		} else {
			c.SetEndpointSlice(orig)
		}
		i++
		c.Desired()
	}
}

// movedEndpoint returns service 4242's slice and a copy whose first remote
// backend moved to node-7 with a new IP.
func movedEndpoint(cl *enginetest.Cluster) (orig, moved *discoveryv1.EndpointSlice) {
	orig = cl.EndpointSlices[4242]
	for i, e := range orig.Endpoints {
		if *e.NodeName != cl.NodeName {
			return orig, enginetest.WithEndpoint(orig, i, enginetest.PodIP(7, enginetest.FreePodIndex), enginetest.NodeName(7))
		}
	}
	panic("service 4242 has no remote backend")
}

// TestIncrementalIsCheaper guards the design goal: one endpoint change costs
// at least 100x less than a full computation. It times one full computation
// (what Compute does, on a Cache it then keeps) and 100 changes rather than
// running both benchmarks, which would compute everything twice.
func TestIncrementalIsCheaper(t *testing.T) {
	if testing.Short() {
		t.Skip("timing-based")
	}
	if raceEnabled {
		// The race detector slows the two sides unequally, so the ratio
		// says nothing; it would also cost ~8 s of every -race run.
		t.Skip("timing-based: meaningless under the race detector")
	}
	cl := enginetest.Large()
	start := time.Now()
	c := cl.Cache()
	c.SetNode(cl.NodeName, cl.Config, nil, nil, cl.View(ws2022))
	c.Desired()
	full := time.Since(start)

	orig, moved := movedEndpoint(cl)
	const changes = 100
	start = time.Now()
	for i := range changes {
		if i%2 == 0 {
			c.SetEndpointSlice(moved)
		} else {
			c.SetEndpointSlice(orig)
		}
		c.Desired()
	}
	inc := time.Since(start) / changes
	ratio := float64(full) / float64(max(inc, 1))
	t.Logf("full %v, one endpoint change %v: %.0fx", full, inc, ratio)
	if ratio < 100 {
		t.Errorf("incremental is only %.0fx cheaper than a full computation, want >= 100x", ratio)
	}
}
