package daemon

import (
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/nodeinfo"
)

// macLookup is a host MAC found for the node's IPs, kept between syncs. Finding one enumerates the
// host's network interfaces, which on Windows is one GetAdaptersAddresses call for the list and one
// more for each interface's addresses, milliseconds together (docs/windows.md, "What a call
// costs"), and every EndpointSlice event's sync asked again. A MAC found is kept for a sync period,
// so an interface replaced behind the agent's back is seen within one, as drift is; kube-proxy
// looks it up once, when it starts.
type macLookup struct {
	ips []netip.Addr
	mac string
	at  time.Time
}

// fresh reports whether the lookup found a MAC for these node IPs less than period ago. A MAC not
// found is looked up again at the next sync: the status reports it missing (HostMACUnknown) until
// the interface comes up.
func (l *macLookup) fresh(ips []netip.Addr, now time.Time, period time.Duration) bool {
	return l.mac != "" && slices.Equal(l.ips, ips) && now.Sub(l.at) < period
}

// hostMAC resolves the host MAC for the node's primary IP: the resolved config's first node IP, or
// the Node's first InternalIP.
func (a *agent) hostMAC(cfg v1alpha1.ResolvedProxyConfig, node *corev1.Node, period time.Duration) string {
	if a.opts.HostMAC == nil {
		return ""
	}
	// The engine's node IP is the IPv4 one; an address no host interface holds is skipped.
	ips := nodeinfo.IPs(cfg.NodeIPs, node)
	now := a.opts.Clock.Now()
	if a.mac.fresh(ips, now, period) {
		return a.mac.mac
	}
	a.mac = macLookup{ips: ips, at: now}
	for _, ip := range ips {
		if mac := a.opts.HostMAC(ip); mac != "" {
			a.mac.mac = mac
			break
		}
	}
	return a.mac.mac
}
