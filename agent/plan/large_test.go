package plan

import (
	"fmt"
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hnsdump"
	"github.com/winproxy/winproxy/agent/ownership"
)

// largeDump is the example host's dump with n foreign load balancers more (each on its own
// frontend, with one of n/2 foreign remote endpoints as backend), as a host with n Services that
// kube-proxy programmed would be: what a 65 MB dump of 200k load balancers holds.
func largeDump(t testing.TB, n int) *File {
	s, host := exampleHost(t, true)
	ledger, _ := ownership.OpenLedger("")
	d := dumpOf(t, s, host, ledger)
	nets := d.Networks[0].ID
	eps := max(n/2, 1)
	for i := range eps {
		d.Endpoints = append(d.Endpoints, hnsdump.Endpoint{Owner: hnsdump.OwnerForeign, Endpoint: hns.Endpoint{
			ID: fmt.Sprintf("E%07d-0000-0000-0000-000000000000", i), Name: fmt.Sprintf("pod-%d", i), NetworkID: nets,
			IPs: []netip.Addr{netip.AddrFrom4([4]byte{10, byte(200 + i>>16), byte(i >> 8), byte(i)})}, MAC: "00-15-5D-00-00-01", Remote: true}})
	}
	for i := range n {
		d.LoadBalancers = append(d.LoadBalancers, hnsdump.LoadBalancer{Owner: hnsdump.OwnerForeign, LoadBalancer: hns.LoadBalancer{
			ID:                 fmt.Sprintf("L%07d-0000-0000-0000-000000000000", i),
			FrontendVIPs:       []netip.Addr{netip.AddrFrom4([4]byte{10, 112, byte(i >> 8), byte(i)})},
			PortMapping:        hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 8080, ExternalPort: uint16(1000 + i>>16)},
			BackendEndpointIDs: []string{fmt.Sprintf("E%07d-0000-0000-0000-000000000000", i%eps)},
		}})
	}
	return exampleWithDump(t, d)
}

// largeDumpHeapPerLB bounds the heap of a plan per load balancer of the dump: the dump, its
// simulated host and the listing of each object are linear in its size (200,000 load balancers
// peaked at 475 MiB, about 2.4 KiB each). Before, every object's outcome scanned every call and
// every backend every endpoint, which took past 90 s and 1.6 GB at 200,000.
const largeDumpHeapPerLB = 5 << 10

// A plan against a dump of 20,000 load balancers finishes with a heap linear in the dump and the
// same count of load balancers listed: nothing in it is quadratic in the size of the host. A
// quadratic path costs 400 million steps here, minutes under -race; the 200,000 of a real 65 MB
// dump are BenchmarkPlanLargeDump's (make bench), which keeps this test in make test-unit's
// seconds.
func TestPlanAgainstALargeDump(t *testing.T) {
	took, peak := planLargeDump(t, 20_000)
	t.Logf("plan against 20,000 load balancers: %v, heap peak %d MiB", took.Round(time.Millisecond), peak>>20)
}

// BenchmarkPlanLargeDump plans against a dump of 200,000 load balancers and 100,000 endpoints,
// what a 65 MB dump holds, and reports the time and heap peak of one plan:
// go test -run '^$' -bench BenchmarkPlanLargeDump -benchtime 1x ./agent/plan
func BenchmarkPlanLargeDump(b *testing.B) {
	for b.Loop() {
		took, peak := planLargeDump(b, 200_000)
		b.ReportMetric(took.Seconds(), "plan-s")
		b.ReportMetric(float64(peak>>20), "heap-peak-MiB")
	}
}

// planLargeDump plans against largeDump(n), failing when it lists fewer than n load balancers or
// its heap peaks above largeDumpHeapPerLB per load balancer; it returns the plan's time and peak.
func planLargeDump(t testing.TB, n int) (time.Duration, int64) {
	f := largeDump(t, n)
	var peak atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if h := int64(m.HeapAlloc); h > peak.Load() {
				peak.Store(h)
			}
		}
	}()
	start := time.Now()
	p, err := Build(f)
	took := time.Since(start)
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if len(p.HostLoadBalancers) < n {
		t.Errorf("%d host load balancers listed, want at least %d", len(p.HostLoadBalancers), n)
	}
	if bound := int64(n) * largeDumpHeapPerLB; peak.Load() > bound {
		t.Errorf("heap peak %d MiB, want at most %d MiB for %d load balancers", peak.Load()>>20, bound>>20, n)
	}
	return took, peak.Load()
}
