package apply

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/winproxy/winproxy/agent/engine/enginetest"
	"github.com/winproxy/winproxy/agent/hns/sim"
)

// BenchmarkRebootToDNS is a node's first sync after a reboot (HNS holds the
// CNI's network and pod endpoints, nothing of the agent's) under the latency
// model of docs/windows.md#what-a-call-costs: every HNS call costs
// sim.WindowsCallLatency, summed on a virtual clock instead of slept. It
// reports when the DNS Service's load balancers and the API server's are
// all created (dns-s, apiserver-s, critical-s: the later of the two), when
// the sync ends (full-s), and critical-s as a share of full-s (critical-%),
// with the first sync's order (first) and with the phases' order a later
// sync keeps (key-order), where the key order puts them. Goal: critical-%
// ≤ 1 with the first sync's order.
func BenchmarkRebootToDNS(b *testing.B) {
	for _, n := range []int{2000, 10000} {
		cl := withCriticalServices(enginetest.Winkernel(n, true, false))
		for _, keyOrder := range []bool{false, true} {
			name := "first"
			if keyOrder {
				name = "key-order"
			}
			b.Run(fmt.Sprintf("services=%d/%s", n, name), func(b *testing.B) {
				var t rebootTimes
				for range b.N {
					log, _, _ := firstSync(b, cl, keyOrder, sim.WindowsCallLatency)
					t = timesOf(log)
				}
				b.ReportMetric(t.dns.Seconds(), "dns-s")
				b.ReportMetric(t.apiServer.Seconds(), "apiserver-s")
				b.ReportMetric(t.critical().Seconds(), "critical-s")
				b.ReportMetric(t.full.Seconds(), "full-s")
				share := 100 * t.critical().Seconds() / t.full.Seconds()
				b.ReportMetric(share, "critical-%")
				if !keyOrder && share > 1 {
					b.Errorf("goal missed: DNS and the API server after %.2f %% of the first sync, want ≤ 1 %%", share)
				}
			})
		}
	}
}

// rebootTimes are when a first sync had created the DNS Service's load
// balancers, the API server's, and everything, on the virtual clock.
type rebootTimes struct {
	dns, apiServer, full time.Duration
}

func (t rebootTimes) critical() time.Duration { return max(t.dns, t.apiServer) }

func timesOf(log *lbLog) rebootTimes {
	last := func(vip netip.Addr) time.Duration {
		var at time.Duration
		for _, c := range log.created {
			if c.vip == vip {
				at = c.at
			}
		}
		return at
	}
	return rebootTimes{dns: last(clusterDNSVIP), apiServer: last(apiServerVIP), full: log.clock.Elapsed()}
}
