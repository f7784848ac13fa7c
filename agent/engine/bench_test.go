package engine_test

import (
	"fmt"
	"testing"

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
	orig, moved := movedEndpoint(cl, 4242)
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
func movedEndpoint(cl *enginetest.Cluster, service int) (orig, moved *discoveryv1.EndpointSlice) {
	orig = cl.EndpointSlices[service]
	for i, e := range orig.Endpoints {
		if *e.NodeName != cl.NodeName {
			return orig, enginetest.WithEndpoint(orig, i, enginetest.PodIP(7, enginetest.FreePodIndex), enginetest.NodeName(7))
		}
	}
	panic(fmt.Sprintf("service %d has no remote backend", service))
}

// TestIncrementalIsCheaper guards the design goal: one endpoint change costs
// at least 100x less than a full computation. It counts allocations, which,
// unlike time, hold still on a shared machine and under the race detector,
// on the 2,000-service workload of reference §11; the benchmarks above time
// both on the 10k cluster.
func TestIncrementalIsCheaper(t *testing.T) {
	cl := enginetest.Winkernel(2000, true, false)
	var c *engine.Cache
	full := testing.AllocsPerRun(1, func() {
		c = cl.Cache()
		c.SetNode(cl.NodeName, cl.Config, nil, nil, cl.View(ws2022))
		c.Desired()
	})
	orig, moved := movedEndpoint(cl, 42)
	flip := false
	inc := testing.AllocsPerRun(20, func() {
		if flip = !flip; flip {
			c.SetEndpointSlice(moved)
		} else {
			c.SetEndpointSlice(orig)
		}
		c.Desired()
	})
	ratio := full / max(inc, 1)
	t.Logf("full computation %.0f allocations, one endpoint change %.0f: %.0fx", full, inc, ratio)
	if ratio < 100 {
		t.Errorf("incremental is only %.0fx cheaper than a full computation, want >= 100x", ratio)
	}
}
