package engine

import (
	"iter"
	"net/netip"

	"github.com/winproxy/winproxy/agent/addrmap"
)

// addrList is the addresses one service used and what it did with each, kept by its contribution
// to take them back. Nearly every backend address is both looked up and a remote endpoint, so one
// list holds both: one entry and one map update an address instead of two. An entry is 8 bytes
// without a pointer, for 110,000 addresses at 10k services (3.4 MB when each held a netip.Addr):
// an IPv4 address is held as its 4-byte form (addrmap.Key4), any other by its place in others.
type addrList struct {
	refs   []addrRef
	others []netip.Addr
}

// addrRef is what one service did with one address: looked it up among the local HNS endpoints,
// and wanted its remote endpoint as a backend or as its service VIP, or not at all.
type addrRef struct {
	// ip is the IPv4 address's 4-byte form, or the address's place in others.
	ip       uint32
	other    bool
	lookedUp bool
	remote   remoteUse
}

// remoteUse is what a service wants an address's remote endpoint for.
type remoteUse uint8

const (
	noRemote remoteUse = iota
	backendRemote
	serviceVIPRemote
)

// all yields each address with what the service did with it.
func (l addrList) all() iter.Seq2[netip.Addr, addrRef] {
	return func(yield func(netip.Addr, addrRef) bool) {
		for _, ref := range l.refs {
			var ip netip.Addr
			if ref.other {
				ip = l.others[ref.ip]
			} else {
				ip = addrmap.Addr4(ref.ip)
			}
			if !yield(ip, ref) {
				return
			}
		}
	}
}

// at is the i-th address and what the service did with it.
func (l addrList) at(i int) (netip.Addr, addrRef) {
	ref := l.refs[i]
	if ref.other {
		return l.others[ref.ip], ref
	}
	return addrmap.Addr4(ref.ip), ref
}

// changedRemotes yields the addresses whose remote endpoint a service wants differently in now
// than in was, or wants in one of them only; both lists are sorted by address (addrRefs).
func changedRemotes(was, now addrList) iter.Seq[netip.Addr] {
	return func(yield func(netip.Addr) bool) {
		i, j := 0, 0
		for i < len(was.refs) || j < len(now.refs) {
			var w, n netip.Addr
			var wr, nr addrRef
			if i < len(was.refs) {
				w, wr = was.at(i)
			}
			if j < len(now.refs) {
				n, nr = now.at(j)
			}
			ip, changed := n, false
			switch {
			case j == len(now.refs) || i < len(was.refs) && w.Less(n): // in was only
				ip, changed = w, wr.remote != noRemote
				i++
			case i == len(was.refs) || n.Less(w): // in now only
				changed = nr.remote != noRemote
				j++
			default:
				changed = wr.remote != nr.remote
				i, j = i+1, j+1
			}
			if changed && !yield(ip) {
				return
			}
		}
	}
}

// addrRefs merges a service's remote endpoints and looked-up addresses, both sorted by address
// with each address once (serviceComputer.result), into one list.
func addrRefs(remotes []RemoteEndpoint, ips []netip.Addr) addrList {
	var l addrList
	if len(remotes)+len(ips) == 0 {
		return l
	}
	l.refs = make([]addrRef, 0, max(len(remotes), len(ips)))
	for len(remotes) > 0 || len(ips) > 0 {
		var ip netip.Addr
		switch {
		case len(ips) == 0 || len(remotes) > 0 && remotes[0].IP.Less(ips[0]):
			ip = remotes[0].IP
		default:
			ip = ips[0]
		}
		var ref addrRef
		if k, is4 := addrmap.Key4(ip); is4 {
			ref.ip = k
		} else {
			ref.ip, ref.other = uint32(len(l.others)), true
			l.others = append(l.others, ip)
		}
		if len(remotes) > 0 && remotes[0].IP == ip {
			ref.remote = backendRemote
			if remotes[0].ServiceVIP {
				ref.remote = serviceVIPRemote
			}
			remotes = remotes[1:]
		}
		if len(ips) > 0 && ips[0] == ip {
			ref.lookedUp = true
			ips = ips[1:]
		}
		l.refs = append(l.refs, ref)
	}
	return l
}
