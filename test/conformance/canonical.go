package conformance

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
)

// The canonical form is what both proxies must agree on, free of what may
// legitimately differ: object IDs, creation order, names of the objects a
// proxy creates, and the case of MACs.

// Frontend identifies a load balancer: family, VIP ("" for NodePort),
// protocol and external port.
type Frontend struct {
	Family   string
	VIP      string
	Protocol uint32
	Port     uint16
}

func (f Frontend) String() string {
	vip := "*"
	if f.VIP != "" {
		vip = f.VIP
		if strings.Contains(vip, ":") {
			vip = "[" + vip + "]"
		}
	}
	return fmt.Sprintf("%s %s %s:%d", f.Family, protoName(f.Protocol), vip, f.Port)
}

func protoName(p uint32) string {
	switch p {
	case 6:
		return "TCP"
	case 17:
		return "UDP"
	case 132:
		return "SCTP"
	}
	return fmt.Sprintf("proto%d", p)
}

// CanonLB is a load balancer without its identity and IDs. Backends name
// the endpoints by address: "10.100.0.5" (local), "remote 10.101.0.7", and
// "gone 10.100.0.5" for an ID no longer listed (the endpoint was deleted;
// its address is taken from earlier steps).
type CanonLB struct {
	InternalPort uint16
	Flags        uint32
	PortFlags    uint32
	Distribution uint32
	SourceVIP    string
	Backends     []string
}

func (lb CanonLB) String() string {
	s := fmt.Sprintf("internal=%d flags=%d portFlags=%d", lb.InternalPort, lb.Flags, lb.PortFlags)
	if lb.Distribution != 0 {
		s += fmt.Sprintf(" distribution=%d", lb.Distribution)
	}
	if lb.SourceVIP != "" {
		s += " sourceVIP=" + lb.SourceVIP
	}
	return s + " backends=[" + strings.Join(lb.Backends, " ") + "]"
}

// CanonEP is an endpoint a proxy created: a remote endpoint (MAC and
// provider address), or a local one (the overlay source-VIP endpoint).
type CanonEP struct {
	MAC             string
	ProviderAddress string
}

func (e CanonEP) String() string {
	s := "mac=" + e.MAC
	if e.ProviderAddress != "" {
		s += " pa=" + e.ProviderAddress
	}
	return s
}

// Canon is one side's HNS state after a step.
type Canon struct {
	Error string
	LBs   map[Frontend][]CanonLB
	// Remote endpoints by IP, and local endpoints the proxy created (not
	// given by the CNI) by IP.
	Remote  map[string][]CanonEP
	Created map[string][]CanonEP
}

// history remembers the addresses of every endpoint ID a side has listed,
// to name the backends that point at deleted endpoints.
type history map[string]string

// canonicalize turns a step's HNS state into its canonical form. cni names
// the local endpoints the scenario created (as opposed to the proxy).
func canonicalize(sr StepResult, cni map[string]bool, h history) Canon {
	c := Canon{Error: sr.Error, LBs: map[Frontend][]CanonLB{}, Remote: map[string][]CanonEP{}, Created: map[string][]CanonEP{}}
	byID := map[string]Endpoint{}
	for _, ep := range sr.Endpoints {
		id := strings.ToUpper(ep.ID)
		byID[id] = ep
		h[id] = strings.Join(sortedIPs(ep.IPs), ",")
		ce := CanonEP{MAC: strings.ToUpper(ep.MAC), ProviderAddress: canonIP(ep.ProviderAddress)}
		switch {
		case ep.Remote:
			for _, ip := range ep.IPs {
				c.Remote[canonIP(ip)] = append(c.Remote[canonIP(ip)], ce)
			}
		case !cni[ep.Name]:
			for _, ip := range ep.IPs {
				c.Created[canonIP(ip)] = append(c.Created[canonIP(ip)], ce)
			}
		}
	}
	for _, lb := range sr.LoadBalancers {
		f := Frontend{Protocol: lb.Protocol, Port: lb.ExternalPort, Family: "v4"}
		if len(lb.VIPs) > 0 {
			f.VIP = canonIP(lb.VIPs[0])
			if a, err := netip.ParseAddr(f.VIP); err == nil && a.Is6() {
				f.Family = "v6"
			}
		} else if lb.Flags&2 != 0 {
			f.Family = "v6"
		}
		cl := CanonLB{InternalPort: lb.InternalPort, Flags: lb.Flags, PortFlags: lb.PortFlags,
			Distribution: lb.Distribution, SourceVIP: canonIP(lb.SourceVIP)}
		for _, id := range lb.Endpoints {
			uid := strings.ToUpper(id)
			switch ep, ok := byID[uid]; {
			case ok && ep.Remote:
				cl.Backends = append(cl.Backends, "remote "+h[uid])
			case ok:
				cl.Backends = append(cl.Backends, h[uid])
			case h[uid] != "":
				cl.Backends = append(cl.Backends, "gone "+h[uid])
			default:
				cl.Backends = append(cl.Backends, "unknown "+id)
			}
		}
		slices.Sort(cl.Backends)
		c.LBs[f] = append(c.LBs[f], cl)
	}
	for _, lbs := range c.LBs {
		slices.SortFunc(lbs, func(a, b CanonLB) int { return strings.Compare(a.String(), b.String()) })
	}
	for _, m := range []map[string][]CanonEP{c.Remote, c.Created} {
		for _, eps := range m {
			slices.SortFunc(eps, func(a, b CanonEP) int { return strings.Compare(a.String(), b.String()) })
		}
	}
	return c
}

func sortedIPs(ips []string) []string {
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, canonIP(ip))
	}
	slices.Sort(out)
	return out
}

// canonIP writes an address in canonical form ("" stays "").
func canonIP(s string) string {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.String()
	}
	return s
}

// DiffKind says how one object differs between upstream and winproxy.
type DiffKind string

const (
	// DiffError: one side failed to start (or panicked), the other did not.
	DiffError DiffKind = "error"
	// DiffLBUpstreamOnly / DiffLBWinproxyOnly: a load balancer only one
	// side has at that frontend.
	DiffLBUpstreamOnly DiffKind = "lb-upstream-only"
	DiffLBWinproxyOnly DiffKind = "lb-winproxy-only"
	// DiffLB: both have the LB, with different content.
	DiffLB DiffKind = "lb-differs"
	// Remote endpoints, by IP.
	DiffRemoteUpstreamOnly DiffKind = "remote-upstream-only"
	DiffRemoteWinproxyOnly DiffKind = "remote-winproxy-only"
	DiffRemote             DiffKind = "remote-differs"
	// DiffCreated: the local endpoints the proxies created differ.
	DiffCreated DiffKind = "created-local-differs"
)

// Diff is one difference at one step.
type Diff struct {
	Kind     DiffKind
	Frontend Frontend // LB diffs
	IP       string   // endpoint diffs
	Up, Win  *CanonLB // LB diffs; nil on the side without it
	UpEP     []CanonEP
	WinEP    []CanonEP
	UpErr    string
	WinErr   string
	// Fields lists what differs for DiffLB: internalPort, flags,
	// portFlags, distribution, sourceVIP, backends.
	Fields []string
}

func (d Diff) String() string {
	switch d.Kind {
	case DiffError:
		return fmt.Sprintf("error: upstream %q, winproxy %q", d.UpErr, d.WinErr)
	case DiffLBUpstreamOnly:
		return fmt.Sprintf("LB %s only upstream: %s", d.Frontend, d.Up)
	case DiffLBWinproxyOnly:
		return fmt.Sprintf("LB %s only winproxy: %s", d.Frontend, d.Win)
	case DiffLB:
		return fmt.Sprintf("LB %s differs in %s:\n      upstream: %s\n      winproxy: %s", d.Frontend, strings.Join(d.Fields, ", "), d.Up, d.Win)
	}
	return fmt.Sprintf("%s %s: upstream %v, winproxy %v", d.Kind, d.IP, d.UpEP, d.WinEP)
}

// compare lists the differences between two canonical states, in a stable
// order.
func compare(up, win Canon) []Diff {
	var out []Diff
	if up.Error != win.Error {
		out = append(out, Diff{Kind: DiffError, UpErr: up.Error, WinErr: win.Error})
	}
	fronts := slices.SortedFunc(maps.Keys(union(up.LBs, win.LBs)), func(a, b Frontend) int {
		return cmp.Or(cmp.Compare(a.Family, b.Family), cmp.Compare(a.VIP, b.VIP), cmp.Compare(a.Protocol, b.Protocol), cmp.Compare(a.Port, b.Port))
	})
	for _, f := range fronts {
		u, w := up.LBs[f], win.LBs[f]
		n := max(len(u), len(w))
		for i := range n {
			d := Diff{Frontend: f}
			switch {
			case i >= len(w):
				d.Kind, d.Up = DiffLBUpstreamOnly, &u[i]
			case i >= len(u):
				d.Kind, d.Win = DiffLBWinproxyOnly, &w[i]
			default:
				d.Kind, d.Up, d.Win = DiffLB, &u[i], &w[i]
				d.Fields = lbFields(u[i], w[i])
				if len(d.Fields) == 0 {
					continue
				}
			}
			out = append(out, d)
		}
	}
	out = append(out, compareEPs(up.Remote, win.Remote, DiffRemoteUpstreamOnly, DiffRemoteWinproxyOnly, DiffRemote)...)
	out = append(out, compareEPs(up.Created, win.Created, DiffCreated, DiffCreated, DiffCreated)...)
	return out
}

func lbFields(a, b CanonLB) []string {
	var f []string
	if a.InternalPort != b.InternalPort {
		f = append(f, "internalPort")
	}
	if a.Flags != b.Flags {
		f = append(f, "flags")
	}
	if a.PortFlags != b.PortFlags {
		f = append(f, "portFlags")
	}
	if a.Distribution != b.Distribution {
		f = append(f, "distribution")
	}
	if a.SourceVIP != b.SourceVIP {
		f = append(f, "sourceVIP")
	}
	if !slices.Equal(a.Backends, b.Backends) {
		f = append(f, "backends")
	}
	return f
}

func compareEPs(up, win map[string][]CanonEP, upOnly, winOnly, differs DiffKind) []Diff {
	var out []Diff
	for _, ip := range slices.Sorted(maps.Keys(union(up, win))) {
		u, w := up[ip], win[ip]
		switch {
		case len(w) == 0:
			out = append(out, Diff{Kind: upOnly, IP: ip, UpEP: u})
		case len(u) == 0:
			out = append(out, Diff{Kind: winOnly, IP: ip, WinEP: w})
		case !slices.Equal(u, w):
			out = append(out, Diff{Kind: differs, IP: ip, UpEP: u, WinEP: w})
		}
	}
	return out
}

func union[K comparable, V any](a, b map[K]V) map[K]bool {
	out := map[K]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
