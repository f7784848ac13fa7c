package apply

import (
	"context"
	"hash/maphash"
	"net/netip"
	"slices"
	"sync/atomic"

	"github.com/winproxy/winproxy/agent/hns"
)

// model is what HNS holds as far as the applier knows: the network's
// endpoints and the host's load balancers as last listed, with every write
// the applier made since applied to them. It sits between the applier and
// HNS, so no write escapes it.
//
// It exists because a list is the expensive HNS call: through hcsshim it
// opens, queries and closes every object (about 120,000 HCN queries at 10k
// services). An event-triggered sync starts from the model instead (Recall),
// so it costs the writes the change needs and no read. The model is only as
// good as the assumption that nothing else changed HNS, which is why the
// agent still lists on its own period (drift detection), and why any write
// whose outcome is unknown (it failed) makes the model untrusted until the
// next list.
type model struct {
	hns.Client

	valid   bool
	network hns.Network
	// The network's endpoints are eps and briefs: every remote endpoint
	// that a brief holds without loss is one (briefOf), the others are
	// kept whole. recall hands out a new slice of them all, so neither
	// is ever handed out.
	eps    []hns.Endpoint
	briefs briefList
	// briefing is what the briefs share (the network, the provider
	// addresses, MACs other than conjured ones, the first 96 bits of IPv6
	// addresses); a new one with every list, so that no node's address
	// outlives its last backend by more than a list.
	briefing *briefing
	// lbs is handed out in Observations and never changed in place (an
	// Apply may be reading it). Deletes and modifies, of endpoints too,
	// are kept aside, by ID, and folded in by the next recall. Appends are
	// safe: a handed-out slice keeps its length.
	lbs            []hns.LoadBalancer
	epGone, lbGone map[hns.ID]bool
	lbNow          map[hns.ID]hns.LoadBalancer
	// epAt and lbAt index the whole endpoints and lbs by ID, and briefsAt
	// the briefs by address, for the few lookups of a sync that programs
	// only what changed; built on first use, kept with appends. The maps are
	// dropped when the slices are compacted; briefsAt follows the briefs'
	// moves.
	epAt, lbAt map[hns.ID]int
	briefsAt   briefIndex
	// local are the local endpoints among eps (pods, the host's, the
	// source VIP's): all the engine reads of them, kept up to date with
	// every write (a new slice whenever one goes: a view may hold the old
	// one). localIPs maps their addresses to their IDs (the last listed
	// wins, as in a full Apply's index), for a sync that programs only what
	// changed; a new map for every list, never cleared (a sync may hold the
	// old one; a local endpoint created is added in place, as that sync
	// adds it too). localVersion names local in the views the engine is given
	// (engine.HNSView.EndpointsVersion): a new number, unique in the
	// process, whenever local changes.
	local        []hns.Endpoint
	localIPs     map[netip.Addr]string
	localVersion uint64
	// localIDs are the local endpoints' IDs (upper case), so that a deleted endpoint, nearly
	// always a remote one, is found not to be local without comparing its ID with each of
	// the node's pods' (localDeleted, at every event that moves a remote endpoint).
	localIDs map[hns.ID]struct{}
	// idSum and idCount fingerprint the IDs of the model's objects, for
	// matches: the sum of their hashes (upper case), whatever the order.
	seed    maphash.Seed
	idSum   uint64
	idCount int
}

// viewVersions numbers the models' local endpoints, across the process, so
// that no two models' views share a number.
var viewVersions atomic.Uint64

// listed makes eps and lbs, just listed from the network, the model.
func (m *model) listed(network hns.Network, eps []hns.Endpoint, lbs []hns.LoadBalancer) {
	m.valid, m.network, m.lbs, m.briefing = true, network, lbs, newBriefing(network.ID)
	m.idSum, m.idCount = 0, 0
	// Nearly every endpoint of a large node is one of the agent's, held in brief, in chunks that
	// appending never copies (briefList).
	m.eps, m.briefs, m.epAt, m.lbAt, m.local = nil, briefList{}, nil, nil, nil
	m.briefsAt = briefIndex{}
	for _, ep := range eps {
		if hns.SameID(ep.NetworkID, network.ID) {
			// One copy of the network's ID, not one per endpoint decoded from HNS's answer.
			ep.NetworkID = network.ID
		}
		m.added(ep.ID)
		m.keep(ep)
		if !ep.Remote {
			m.local = append(m.local, ep)
		}
	}
	m.localChanged()
	for _, lb := range lbs {
		m.added(lb.ID)
	}
	clear(m.epGone)
	clear(m.lbGone)
	clear(m.lbNow)
}

// reread takes now, the model's network read again (its remote-subnet
// routes follow the CNI), and returns it as the model holds it: with the ID
// as listed, which the model's endpoints and briefs carry, should HNS spell
// it in another case.
func (m *model) reread(now hns.Network) hns.Network {
	now.ID = m.network.ID
	m.network = now
	return now
}

// forget marks the model untrusted until the next list.
func (m *model) forget() {
	m.listed(hns.Network{}, nil, nil)
	m.valid = false
}

// recall returns the model's endpoints and load balancers, to be read only.
func (m *model) recall() (hns.Network, []hns.Endpoint, []hns.LoadBalancer, bool) {
	if !m.valid {
		return hns.Network{}, nil, nil, false
	}
	if len(m.epGone) > 0 {
		// Neither is handed out: they are compacted in place.
		m.eps = slices.DeleteFunc(m.eps, func(ep hns.Endpoint) bool { return m.epGone[hns.IDOf(ep.ID)] })
		m.briefsAt.removed(m.briefs.deleteFunc(func(b brief) bool { return m.epGone[hns.IDOf(b.id)] }))
		clear(m.epGone)
		m.epAt = nil
	}
	if len(m.lbGone)+len(m.lbNow) > 0 {
		lbs := make([]hns.LoadBalancer, 0, len(m.lbs))
		for _, lb := range m.lbs {
			id := hns.IDOf(lb.ID)
			if now, ok := m.lbNow[id]; ok {
				lb = now
			}
			if !m.lbGone[id] {
				lbs = append(lbs, lb)
			}
		}
		m.lbs = lbs
		clear(m.lbGone)
		clear(m.lbNow)
		m.lbAt = nil
	}
	eps := append(make([]hns.Endpoint, 0, len(m.eps)+m.briefs.len()), m.eps...)
	for _, chunk := range m.briefs.chunks {
		eps = expandAll(eps, chunk, m.briefing)
	}
	return m.network, eps, m.lbs, true
}

// localView returns the network and its local endpoints with their version
// and their addresses' map, to be read only: for a sync that programs only
// what changed and never reads the whole model. It costs nothing however
// many pods the node runs.
func (m *model) localView() (hns.Network, []hns.Endpoint, uint64, map[netip.Addr]string, bool) {
	if !m.valid {
		return hns.Network{}, nil, 0, nil, false
	}
	return m.network, m.local, m.localVersion, m.localIPs, true
}

// localChanged maps the local endpoints' addresses again and numbers them.
func (m *model) localChanged() {
	m.localIPs = make(map[netip.Addr]string, len(m.local))
	m.localIDs = make(map[hns.ID]struct{}, len(m.local))
	for _, ep := range m.local {
		for _, ip := range ep.IPs {
			m.localIPs[ip] = ep.ID
		}
		m.localIDs[hns.IDOf(ep.ID)] = struct{}{}
	}
	m.localVersion = viewVersions.Add(1)
}

// localDeleted drops the local endpoint id, if it is one, from local.
func (m *model) localDeleted(id string) {
	if _, ok := m.localIDs[hns.IDOf(id)]; !ok {
		return
	}
	i := slices.IndexFunc(m.local, func(ep hns.Endpoint) bool { return hns.SameID(ep.ID, id) })
	if i < 0 {
		return
	}
	m.local = slices.Delete(slices.Clone(m.local), i, i+1)
	m.localChanged()
}

// endpoint looks up the endpoint id, which the applier knows for ip.
func (m *model) endpoint(ip netip.Addr, id string) (hns.Endpoint, bool) {
	uid := hns.IDOf(id)
	if !m.valid || m.epGone[uid] {
		return hns.Endpoint{}, false
	}
	if at, ok := m.briefing.addrOf(ip, false); ok {
		if i, ok := m.briefsAt.find(&m.briefs, at, id); ok {
			return m.briefs.at(i).expand(m.briefing), true
		}
	}
	if m.epAt == nil {
		m.epAt = byID(m.eps, func(ep hns.Endpoint) string { return ep.ID })
	}
	i, ok := m.epAt[uid]
	if !ok {
		return hns.Endpoint{}, false
	}
	return m.eps[i], true
}

// keep adds ep, an endpoint of the network, to eps or, in brief, to
// briefs, and indexes it when the index is built.
func (m *model) keep(ep hns.Endpoint) {
	if b, ok := briefOf(ep, m.briefing); ok {
		m.briefsAt.added(&m.briefs, m.briefs.add(b))
		return
	}
	m.eps = append(m.eps, ep)
	if m.epAt != nil {
		m.epAt[hns.IDOf(ep.ID)] = len(m.eps) - 1
	}
}

// loadBalancer looks up the load balancer id.
func (m *model) loadBalancer(id string) (hns.LoadBalancer, bool) {
	uid := hns.IDOf(id)
	if !m.valid || m.lbGone[uid] {
		return hns.LoadBalancer{}, false
	}
	if now, ok := m.lbNow[uid]; ok {
		return now, true
	}
	if m.lbAt == nil {
		m.lbAt = byID(m.lbs, func(lb hns.LoadBalancer) string { return lb.ID })
	}
	i, ok := m.lbAt[uid]
	if !ok {
		return hns.LoadBalancer{}, false
	}
	return m.lbs[i], true
}

// byID indexes objs by ID.
func byID[T any](objs []T, id func(T) string) map[hns.ID]int {
	at := make(map[hns.ID]int, len(objs))
	for i, o := range objs {
		at[hns.IDOf(id(o))] = i
	}
	return at
}

// matches reports whether HNS holds exactly the objects of the model, by
// their IDs as HcnEnumerate* answers them: as many, with the same sum of
// hashes. No map is built and nothing is sorted: at 10k services that is
// 120,000 IDs on every check. A random seed per process keeps a different
// set of IDs from matching by chance.
func (m *model) matches(epIDs, lbIDs hns.IDList) bool {
	if !m.valid || epIDs.Len()+lbIDs.Len() != m.idCount {
		return false
	}
	var sum uint64
	for _, ids := range []hns.IDList{epIDs, lbIDs} {
		for id := range ids.All() {
			sum += m.hash(id)
		}
	}
	return sum == m.idSum
}

// hash is an ID's hash whatever the case of its hex digits. The ID is
// upper-cased into a buffer on the stack as it is read: reading each of
// 120,000 IDs once, in place in HNS's answer, is most of a check's cost
// after the answer's parse.
func (m *model) hash(id string) uint64 {
	if m.seed == (maphash.Seed{}) {
		m.seed = maphash.MakeSeed()
	}
	var buf [64]byte
	if len(id) > len(buf) {
		return maphash.String(m.seed, string(hns.IDOf(id)))
	}
	b := buf[:len(id)]
	for i := range len(id) {
		c := id[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		b[i] = c
	}
	return maphash.Bytes(m.seed, b)
}

// added and removed keep the fingerprint up to date with a write.
func (m *model) added(id string) {
	m.idSum += m.hash(id)
	m.idCount++
}

func (m *model) removed(id string) {
	m.idSum -= m.hash(id)
	m.idCount--
}

// wrote updates the model after a write: err == nil means done; a
// not-found answer to a delete means gone all the same; any other error
// leaves HNS in a state the applier cannot know (a timeout may still be
// carried out), so the model is forgotten.
func (m *model) wrote(err error, deleting bool, update func()) {
	switch {
	case !m.valid:
	case err == nil, deleting && hns.IsNotFound(err):
		update()
	default:
		m.forget()
	}
}

func (m *model) CreateEndpoint(ctx context.Context, networkID string, ep hns.Endpoint) (hns.Endpoint, error) {
	created, err := m.Client.CreateEndpoint(ctx, networkID, ep)
	m.wrote(err, false, func() {
		if hns.SameID(networkID, m.network.ID) {
			created = m.canonical(created, ep)
			m.keep(created)
			if !created.Remote {
				m.local = append(m.local, created)
				for _, ip := range created.IPs {
					m.localIPs[ip] = created.ID
				}
				m.localIDs[hns.IDOf(created.ID)] = struct{}{}
				m.localVersion = viewVersions.Add(1)
			}
			m.added(created.ID)
		}
	})
	return created, err
}

// canonical is created, as HNS answered a request for ep, with the strings
// and addresses it shares with the request and the network held once: HNS
// answers in JSON, whose every field decodes to a new string, and the model
// keeps a hundred thousand remote endpoints at 10k services.
func (m *model) canonical(created, ep hns.Endpoint) hns.Endpoint {
	if hns.SameID(created.NetworkID, m.network.ID) {
		created.NetworkID = m.network.ID
	}
	if created.Name == ep.Name {
		created.Name = ep.Name
	}
	if created.MAC == ep.MAC {
		created.MAC = ep.MAC
	}
	if slices.Equal(created.IPs, ep.IPs) {
		created.IPs = ep.IPs
	}
	return created
}

// sharedLB is got, as HNS answered a request for lb, with the addresses and
// backend IDs it shares with the request: the request's backend IDs are the
// model's own endpoint IDs, where the answer's are new strings, ten a load
// balancer.
func sharedLB(got, lb hns.LoadBalancer) hns.LoadBalancer {
	if slices.Equal(got.FrontendVIPs, lb.FrontendVIPs) {
		got.FrontendVIPs = lb.FrontendVIPs
	}
	if slices.Equal(got.BackendEndpointIDs, lb.BackendEndpointIDs) {
		got.BackendEndpointIDs = lb.BackendEndpointIDs
	}
	return got
}

func (m *model) DeleteEndpoint(ctx context.Context, id string) error {
	err := m.Client.DeleteEndpoint(ctx, id)
	m.wrote(err, true, func() { mark(&m.epGone, id); m.removed(id); m.localDeleted(id) })
	return err
}

func (m *model) CreateLoadBalancer(ctx context.Context, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	created, err := m.Client.CreateLoadBalancer(ctx, lb)
	m.wrote(err, false, func() {
		created = sharedLB(created, lb)
		m.lbs = append(m.lbs, created)
		if m.lbAt != nil {
			m.lbAt[hns.IDOf(created.ID)] = len(m.lbs) - 1
		}
		m.added(created.ID)
	})
	return created, err
}

func (m *model) ModifyLoadBalancer(ctx context.Context, id string, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	got, err := m.Client.ModifyLoadBalancer(ctx, id, lb)
	m.wrote(err, false, func() {
		if m.lbNow == nil {
			m.lbNow = map[hns.ID]hns.LoadBalancer{}
		}
		now := sharedLB(got, lb)
		now.ID = id
		m.lbNow[hns.IDOf(id)] = now
	})
	return got, err
}

func (m *model) DeleteLoadBalancer(ctx context.Context, id string) error {
	err := m.Client.DeleteLoadBalancer(ctx, id)
	m.wrote(err, true, func() { mark(&m.lbGone, id); m.removed(id) })
	return err
}

func mark(set *map[hns.ID]bool, id string) {
	if *set == nil {
		*set = map[hns.ID]bool{}
	}
	(*set)[hns.IDOf(id)] = true
}
