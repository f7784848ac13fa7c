package engine

import (
	"iter"
	"maps"
	"net/netip"
)

// RemoteEndpointSet is a Desired's remote endpoints by address, to be read only.
//
// It is an interface, not a map, so that an Incremental need not keep a second map of the
// hundred thousand addresses at 10k services: its per-address state says which addresses want
// one, and the node context what each is (docs/performance.md, "Where the live heap goes").
type RemoteEndpointSet interface {
	// Get returns the remote endpoint of ip, if one is desired.
	Get(ip netip.Addr) (RemoteEndpoint, bool)
	// Has reports whether a remote endpoint is desired for ip, without making it.
	Has(ip netip.Addr) bool
	// Len is how many remote endpoints are desired.
	Len() int
	// All yields every desired remote endpoint, in no order.
	All() iter.Seq2[netip.Addr, RemoteEndpoint]
}

// RemoteEndpointMap is a RemoteEndpointSet held in a map: Compute's, and a test's.
type RemoteEndpointMap map[netip.Addr]RemoteEndpoint

func (m RemoteEndpointMap) Get(ip netip.Addr) (RemoteEndpoint, bool) {
	re, ok := m[ip]
	return re, ok
}

func (m RemoteEndpointMap) Has(ip netip.Addr) bool {
	_, ok := m[ip]
	return ok
}

func (m RemoteEndpointMap) Len() int { return len(m) }

func (m RemoteEndpointMap) All() iter.Seq2[netip.Addr, RemoteEndpoint] { return maps.All(m) }

// incrementalRemotes are an Incremental's desired remote endpoints, made from its per-address
// state and the node context when asked: an address some backend uses has a backend's remote
// endpoint (nodeContext.backendRemote), else one only service VIPs use has the service VIP's
// (nodeContext.serviceVIPEndpoint).
type incrementalRemotes struct{ c *Incremental }

func (r incrementalRemotes) Get(ip netip.Addr) (RemoteEndpoint, bool) {
	u, ok := r.c.addrs.Get(ip)
	if !ok {
		return RemoteEndpoint{}, false
	}
	return r.c.remoteOf(ip, u)
}

func (r incrementalRemotes) Has(ip netip.Addr) bool { return r.c.addrs.At(ip).remote() }

func (r incrementalRemotes) Len() int { return r.c.remotes }

// All yields the backends' remote endpoints in batches (remotesBatch), made together.
func (r incrementalRemotes) All() iter.Seq2[netip.Addr, RemoteEndpoint] {
	return func(yield func(netip.Addr, RemoteEndpoint) bool) {
		var pending [remotesBatch]netip.Addr
		var made []RemoteEndpoint
		n := 0
		flush := func() bool {
			made = r.c.ctx.backendRemotes(made[:0], pending[:n])
			n = 0
			for _, re := range made {
				if !yield(re.IP, re) {
					return false
				}
			}
			return true
		}
		for ip, u := range r.c.addrs.All() {
			switch {
			case u.backend > 0:
				pending[n] = ip
				if n++; n == len(pending) && !flush() {
					return
				}
			case u.serviceVIP > 0:
				if !yield(ip, r.c.ctx.serviceVIPEndpoint(ip)) {
					return
				}
			}
		}
		flush()
	}
}

// remotesBatch is how many backends' remote endpoints All makes at once: their MACs are one
// allocation (nodeContext.backendRemotes) instead of one each.
const remotesBatch = 256

// remoteOf is the remote endpoint desired for ip, whose use is u.
func (c *Incremental) remoteOf(ip netip.Addr, u addrUse) (RemoteEndpoint, bool) {
	switch {
	case u.backend > 0:
		return c.ctx.backendRemote(ip), true
	case u.serviceVIP > 0:
		return c.ctx.serviceVIPEndpoint(ip), true
	}
	return RemoteEndpoint{}, false
}
