package engine

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/winproxy/winproxy/agent/hns"
)

// benchInput is 10,000 ClusterIP services with 10 endpoints each spread over
// 50 nodes (this node is node-0), on an overlay network.
func benchInput(services int) Input {
	const nodes, perSvc = 50, 10
	v := view(true, ws2022, sourceVIPEP())
	v.Network.RemoteSubnetRoutes = nil
	for n := 1; n < nodes; n++ {
		v.Network.RemoteSubnetRoutes = append(v.Network.RemoteSubnetRoutes, hns.RemoteSubnetRoute{
			DestinationPrefix: netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/16", 100+n)),
			ProviderAddress:   netip.MustParseAddr(fmt.Sprintf("10.0.1.%d", n)),
		})
	}
	in := Input{NodeName: "node-0", Config: config(false)}
	for s := range services {
		name := fmt.Sprintf("svc%d", s)
		cip := fmt.Sprintf("10.96.%d.%d", s/250, s%250+1)
		in.Services = append(in.Services, service(name, clusterIPs(cip)))
		var eps []ep
		for e := range perSvc {
			n := (s*perSvc + e) % nodes
			addr := fmt.Sprintf("10.%d.%d.%d", 100+n, s/250, (s%250)+1)
			if e > 0 {
				addr = fmt.Sprintf("10.%d.%d.%d", 100+n, 200+e, s%250+1)
			}
			if n == 0 {
				v.Endpoints = append(v.Endpoints, localEP(fmt.Sprintf("EP-%d-%d", s, e), addr))
			}
			eps = append(eps, ep{addr, fmt.Sprintf("node-%d", n), ""})
		}
		in.EndpointSlices = append(in.EndpointSlices, slice(name, name+"-x", 8080, eps...))
	}
	in.HNS = v
	return in
}

func BenchmarkCompute10kServices(b *testing.B) {
	in := benchInput(10000)
	b.ResetTimer()
	for b.Loop() {
		Compute(in)
	}
}

func BenchmarkCacheOneEndpointChange10kServices(b *testing.B) {
	in := benchInput(10000)
	c := NewCache()
	c.SetNode(in.NodeName, in.Config, nil, nil, in.HNS)
	for _, s := range in.Services {
		c.SetService(s)
	}
	for _, s := range in.EndpointSlices {
		c.SetEndpointSlice(s)
	}
	c.Desired()
	s := in.EndpointSlices[4242]
	alt := s.DeepCopy()
	alt.Endpoints = alt.Endpoints[:len(alt.Endpoints)-1]
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			c.SetEndpointSlice(alt)
		} else {
			c.SetEndpointSlice(s)
		}
		i++
		c.Desired()
	}
}

// TestIncrementalIsCheaper guards the design goal: one endpoint change costs
// at least 100x less than a full computation.
func TestIncrementalIsCheaper(t *testing.T) {
	if testing.Short() {
		t.Skip("benchmark-based")
	}
	full := testing.Benchmark(BenchmarkCompute10kServices)
	inc := testing.Benchmark(BenchmarkCacheOneEndpointChange10kServices)
	ratio := float64(full.NsPerOp()) / float64(max(inc.NsPerOp(), 1))
	t.Logf("full %v/op, one endpoint change %v/op: %.0fx", full.NsPerOp(), inc.NsPerOp(), ratio)
	if ratio < 100 {
		t.Errorf("incremental is only %.0fx cheaper than a full computation, want >= 100x", ratio)
	}
}
