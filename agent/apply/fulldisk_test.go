package apply

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/winproxy/winproxy/agent/hns/sim"
)

// A full disk under the ownership ledger never costs a Service its load balancer. On Windows
// Server 2019 (no modify) every change deletes a load balancer and creates its replacement; with
// the ledger's disk full, every sync still programs all of them, the result says why the ledger
// lags, a restart (a SIGKILL: nothing flushed) while the disk is still full recognises what
// was created meanwhile, and once the disk has room the ledger catches up, so that a further
// restart writes nothing.
func TestFullDiskLosesNoLoadBalancer(t *testing.T) {
	const services, rounds = 12, 36
	h := newHost(t, sim.WS2019, true, true)
	for i := range services {
		h.service(fmt.Sprintf("svc%02d", i), fmt.Sprintf("10.20.30.%d", 10+i), 0)
		h.endpoints(fmt.Sprintf("svc%02d", i), "192.168.1.5@node-1", fmt.Sprintf("192.168.2.%d@node-2", 10+i))
	}
	h.sync()
	full := func(on bool) {
		if err := h.sim.SetWeather(sim.Weather{DiskFull: on}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, r Result) {
		t.Helper()
		if r.LBsFailed != 0 || len(r.Failures) != 0 {
			t.Fatalf("%s: %d load balancers failed: %v", when, r.LBsFailed, r.Failures)
		}
		if missing := h.missingServices(services); len(missing) > 0 {
			t.Fatalf("%s: no load balancer for %v", when, missing)
		}
	}
	full(true)
	for round := 1; round <= rounds; round++ {
		i := round % services
		h.endpoints(fmt.Sprintf("svc%02d", i), "192.168.1.5@node-1", fmt.Sprintf("192.168.2.%d@node-2", 10+(i+round)%200))
		r, _ := h.sync()
		check(fmt.Sprintf("round %d on a full disk", round), r)
		if !strings.Contains(fmt.Sprint(r.Ledger.WriteErr), syscall.ENOSPC.Error()) || r.Ledger.Unsaved == 0 {
			t.Fatalf("round %d: the result does not say the ledger lags: %+v", round, r.Ledger)
		}
		if round == rounds/2 {
			h.start() // killed: nothing the old process held in memory is on disk
			if r, _ := h.sync(); r.Adopted == 0 {
				t.Errorf("the restart on a full disk adopted nothing: %+v", r)
			}
		}
	}
	full(false)
	r, _ := h.sync()
	check("once the disk has room", r)
	if r.Ledger.Unsaved != 0 || r.Ledger.WriteErr != nil {
		t.Errorf("the ledger did not catch up once the disk had room: %+v", r.Ledger)
	}
	st := h.snapshot()
	if len(st.LoadBalancers) != services {
		t.Errorf("%d load balancers for %d services: leaked", len(st.LoadBalancers), services)
	}
	h.start()
	if r, c := h.sync(); c.Writes != 0 || r.Adopted != 0 {
		t.Errorf("a restart after the disk had room made %d writes and adopted %d: the ledger is incomplete", c.Writes, r.Adopted)
	}
}

// missingServices lists the services svc00..svcNN without a load balancer in HNS.
func (h *host) missingServices(n int) []string {
	have := map[string]bool{}
	for _, lb := range h.snapshot().LoadBalancers {
		have[lb.VIP().String()] = true
	}
	var out []string
	for i := range n {
		if !have[fmt.Sprintf("10.20.30.%d", 10+i)] {
			out = append(out, fmt.Sprintf("svc%02d", i))
		}
	}
	return out
}
