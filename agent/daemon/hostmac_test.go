package daemon

import (
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

func TestHostMACPrefersIPv4AndFallsBack(t *testing.T) {
	macs := map[string]string{"172.20.0.11": "00-15-5d-00-00-0b"}
	a := &agent{opts: Options{Clock: clocktesting.NewFakeClock(time.Now()), HostMAC: func(ip netip.Addr) string { return macs[ip.String()] }}}
	node := &corev1.Node{Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "fd00::11"},
		{Type: corev1.NodeInternalIP, Address: "172.20.0.11"},
	}}}
	// The config's first IP is on no host interface; the node's IPv4 InternalIP is.
	cfg := v1alpha1.ResolvedProxyConfig{NodeIPs: []string{"fd00::11", "10.9.9.9"}}
	if got := a.hostMAC(cfg, node, time.Minute); got != "00-15-5d-00-00-0b" {
		t.Errorf("hostMAC = %q, want the MAC of 172.20.0.11", got)
	}
}

// TestHostMACLookedUpOncePerPeriod follows one agent through syncs: the host's interfaces are
// enumerated again only when the period has passed, the node's IPs changed, or the last lookup
// found nothing.
func TestHostMACLookedUpOncePerPeriod(t *testing.T) {
	const period = 30 * time.Second
	clk := clocktesting.NewFakeClock(time.Now())
	macs := map[string]string{"172.20.0.11": "00-15-5d-00-00-0b", "172.20.0.12": "00-15-5d-00-00-0c"}
	lookups := 0
	a := &agent{opts: Options{Clock: clk, HostMAC: func(ip netip.Addr) string {
		lookups++
		return macs[ip.String()]
	}}}
	nodeAt := func(ip string) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}}}
	}
	steps := []struct {
		name string
		// before runs ahead of the sync: time passes, an interface comes up or changes.
		before func()
		// node is the Node's InternalIP at the sync.
		node string
		// wantMAC is what the sync programs with; wantLookups is how many interface lookups
		// the sync made.
		wantMAC     string
		wantLookups int
	}{
		{name: "first sync looks up", node: "172.20.0.11", wantMAC: "00-15-5d-00-00-0b", wantLookups: 1},
		{name: "an event's sync within the period reuses it", before: func() { clk.Step(period / 2) }, node: "172.20.0.11", wantMAC: "00-15-5d-00-00-0b"},
		{name: "a changed interface is not seen within the period", before: func() { macs["172.20.0.11"] = "00-15-5d-00-00-aa" }, node: "172.20.0.11", wantMAC: "00-15-5d-00-00-0b"},
		{name: "after a period it is looked up again", before: func() { clk.Step(period / 2) }, node: "172.20.0.11", wantMAC: "00-15-5d-00-00-aa", wantLookups: 1},
		{name: "a new node IP is looked up at once", node: "172.20.0.12", wantMAC: "00-15-5d-00-00-0c", wantLookups: 1},
		{name: "no interface holds the IP yet", before: func() { delete(macs, "172.20.0.12") }, node: "172.20.0.13", wantLookups: 1},
		{name: "a MAC not found is looked up at the next sync", before: func() { macs["172.20.0.13"] = "00-15-5d-00-00-0d" }, node: "172.20.0.13", wantMAC: "00-15-5d-00-00-0d", wantLookups: 1},
		{name: "and then kept", node: "172.20.0.13", wantMAC: "00-15-5d-00-00-0d"},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		before := lookups
		if got := a.hostMAC(v1alpha1.ResolvedProxyConfig{}, nodeAt(s.node), period); got != s.wantMAC {
			t.Errorf("%s: hostMAC = %q, want %q", s.name, got, s.wantMAC)
		}
		if got := lookups - before; got != s.wantLookups {
			t.Errorf("%s: %d lookups, want %d", s.name, got, s.wantLookups)
		}
	}
}
