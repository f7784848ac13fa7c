package apply_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/winproxy/winproxy/agent/apply"
	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/engine/enginetest"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/agent/ownership"
	"github.com/winproxy/winproxy/internal/benchmeter"
)

// BenchmarkIDCheck10k times the agent's part of the ID check
// (Applier.Verify) at 10k services, about 120,000 IDs: HNS's answers to the
// two enumerations are taken once, as the JSON text HCN returns, and each
// op reads them as the Windows adapter does (hns.ParseIDList) and compares
// them with the applier's model. What HNS does to produce them (in the
// simulator, BenchmarkSync10kServices/id-check) is left out, as is the
// conversion of HCN's UTF-16 text, one copy. Reported: ids and answer-bytes
// (the answers' size), cpu-ns/op (process CPU, garbage collection
// included).
func BenchmarkIDCheck10k(b *testing.B) {
	cl := enginetest.Large()
	s, err := cl.Host(sim.WS2022)
	if err != nil {
		b.Fatal(err)
	}
	l, err := ownership.OpenLedger(filepath.Join(b.TempDir(), "ledger"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	host := &answered{Sim: s}
	app := apply.New(host, l)
	cache := cl.Incremental()
	ctx := context.Background()
	r, err := apply.FullSync(ctx, app, cl.Network.Name, enginetest.HostMAC, func(v engine.HNSView) *engine.Desired {
		cache.SetNode(cl.NodeName, cl.Config, cl.Nodes[0], v)
		return cache.Desired()
	})
	if err != nil || len(r.Failures) > 0 {
		b.Fatalf("first sync: %v, failures %v", err, r.Failures)
	}
	network, err := s.GetNetworkByName(ctx, cl.Network.Name)
	if err != nil {
		b.Fatal(err)
	}
	ids := 0
	answer := func(l hns.IDList, err error) string {
		if err != nil {
			b.Fatal(err)
		}
		ids += l.Len()
		text, err := json.Marshal(slices.Collect(l.All()))
		if err != nil {
			b.Fatal(err)
		}
		return string(text)
	}
	host.eps = answer(s.ListEndpointIDs(ctx, network.ID))
	host.lbs = answer(s.ListLoadBalancerIDs(ctx))
	// Not the setup's garbage: the check's own.
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchmeter.Process()
	for range b.N {
		if same, err := app.Verify(ctx); err != nil || !same {
			b.Fatalf("Verify() = %v, %v; want true", same, err)
		}
	}
	benchmeter.Report(b, benchmeter.Process()-cpu)
	b.ReportMetric(float64(ids), "ids")
	b.ReportMetric(float64(len(host.eps)+len(host.lbs)), "answer-bytes")
}

// answered is a simulated host whose ID enumerations answer, once set, the
// texts given, read as the Windows adapter reads HCN's answers.
type answered struct {
	*sim.Sim
	eps, lbs string
}

func (a *answered) ListEndpointIDs(ctx context.Context, networkID string) (hns.IDList, error) {
	if a.eps == "" {
		return a.Sim.ListEndpointIDs(ctx, networkID)
	}
	return hns.ParseIDList(a.eps)
}

func (a *answered) ListLoadBalancerIDs(ctx context.Context) (hns.IDList, error) {
	if a.lbs == "" {
		return a.Sim.ListLoadBalancerIDs(ctx)
	}
	return hns.ParseIDList(a.lbs)
}
