package sim

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/winproxy/winproxy/agent/hns"
)

// State is the content of a simulated host, as persisted and as returned by
// Snapshot. Object lists are in creation order.
type State struct {
	Profile       Profile            `json:"profile"`
	Stopped       bool               `json:"stopped,omitempty"`
	Hung          bool               `json:"hung,omitempty"`
	Weather       Weather            `json:"weather,omitzero"`
	Seq           uint64             `json:"seq"`
	Networks      []hns.Network      `json:"networks"`
	Endpoints     []hns.Endpoint     `json:"endpoints"`
	LoadBalancers []hns.LoadBalancer `json:"loadBalancers"`
}

// host is the indexed in-memory form of State.
type host struct {
	profile Profile
	stopped bool
	hung    bool
	weather Weather
	seq     uint64

	networks  map[string]*rec[hns.Network]
	endpoints map[string]*rec[hns.Endpoint]
	lbs       map[string]*rec[hns.LoadBalancer]

	frontends map[hns.Frontend]string   // frontend tuple -> LB ID
	epByIP    map[ipKey]map[string]bool // (network, IP) -> endpoint IDs
}

type rec[T any] struct {
	seq uint64
	obj T
}

type ipKey struct {
	network string
	ip      netip.Addr
}

func newHost(p Profile) *host {
	return &host{
		profile:   p,
		networks:  map[string]*rec[hns.Network]{},
		endpoints: map[string]*rec[hns.Endpoint]{},
		lbs:       map[string]*rec[hns.LoadBalancer]{},
		frontends: map[hns.Frontend]string{},
		epByIP:    map[ipKey]map[string]bool{},
	}
}

// key normalises an HNS GUID: HNS compares them case-insensitively.
func key(id string) string { return string(hns.IDOf(id)) }

func (h *host) addNetwork(n hns.Network) {
	h.seq++
	h.networks[key(n.ID)] = &rec[hns.Network]{seq: h.seq, obj: cloneNetwork(n)}
}

func (h *host) addEndpoint(e hns.Endpoint) {
	h.seq++
	h.endpoints[key(e.ID)] = &rec[hns.Endpoint]{seq: h.seq, obj: cloneEndpoint(e)}
	for _, ip := range e.IPs {
		k := ipKey{key(e.NetworkID), ip}
		if h.epByIP[k] == nil {
			h.epByIP[k] = map[string]bool{}
		}
		h.epByIP[k][key(e.ID)] = true
	}
}

func (h *host) removeEndpoint(id string) {
	r, ok := h.endpoints[key(id)]
	if !ok {
		return
	}
	for _, ip := range r.obj.IPs {
		k := ipKey{key(r.obj.NetworkID), ip}
		delete(h.epByIP[k], key(id))
		if len(h.epByIP[k]) == 0 {
			delete(h.epByIP, k)
		}
	}
	delete(h.endpoints, key(id))
}

func (h *host) putLB(lb hns.LoadBalancer, seq uint64) {
	h.lbs[key(lb.ID)] = &rec[hns.LoadBalancer]{seq: seq, obj: cloneLB(lb)}
	h.frontends[lb.Frontend()] = key(lb.ID)
}

func (h *host) addLB(lb hns.LoadBalancer) {
	h.seq++
	h.putLB(lb, h.seq)
}

func (h *host) removeLB(id string) {
	r, ok := h.lbs[key(id)]
	if !ok {
		return
	}
	if h.frontends[r.obj.Frontend()] == key(id) {
		delete(h.frontends, r.obj.Frontend())
	}
	delete(h.lbs, key(id))
}

func (h *host) networkByName(name string) (hns.Network, bool) {
	for _, r := range sortedRecs(h.networks) {
		if r.obj.Name == name {
			return r.obj, true
		}
	}
	return hns.Network{}, false
}

func sortedRecs[T any](m map[string]*rec[T]) []*rec[T] {
	out := make([]*rec[T], 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *rec[T]) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

func objs[T any](m map[string]*rec[T], clone func(T) T) []T {
	rs := sortedRecs(m)
	out := make([]T, 0, len(rs))
	for _, r := range rs {
		out = append(out, clone(r.obj))
	}
	return out
}

func (h *host) state() State {
	return State{
		Profile:       h.profile,
		Stopped:       h.stopped,
		Hung:          h.hung,
		Weather:       h.weather,
		Seq:           h.seq,
		Networks:      objs(h.networks, cloneNetwork),
		Endpoints:     objs(h.endpoints, cloneEndpoint),
		LoadBalancers: objs(h.lbs, cloneLB),
	}
}

func hostFromState(s State) *host {
	h := newHost(s.Profile)
	h.stopped = s.Stopped
	h.hung = s.Hung
	h.weather = s.Weather
	for _, n := range s.Networks {
		h.addNetwork(n)
	}
	for _, e := range s.Endpoints {
		h.addEndpoint(e)
	}
	for _, lb := range s.LoadBalancers {
		h.addLB(lb)
	}
	if s.Seq > h.seq {
		h.seq = s.Seq
	}
	return h
}

// Clones keep callers from aliasing the simulator's slices.

func cloneNetwork(n hns.Network) hns.Network {
	n.RemoteSubnetRoutes = slices.Clone(n.RemoteSubnetRoutes)
	return n
}

func cloneEndpoint(e hns.Endpoint) hns.Endpoint {
	e.IPs = slices.Clone(e.IPs)
	return e
}

func cloneLB(lb hns.LoadBalancer) hns.LoadBalancer {
	lb.FrontendVIPs = slices.Clone(lb.FrontendVIPs)
	lb.BackendEndpointIDs = slices.Clone(lb.BackendEndpointIDs)
	return lb
}
