package apply

import (
	"slices"
	"strings"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
)

// planLocalEndpoints is the first phase: the agent's remote endpoints
// that duplicate a local one's address (the WS2019/2022 quirk) go, and the
// overlay source-VIP endpoint is created when the engine asks for it.
// Failing that, no load balancer is programmed this sync
// (docs/design/dataplane.md#the-source-vip-endpoint), and HNS is otherwise
// left as it is.
func (s *syncState) planLocalEndpoints() []op {
	var ops []op
	for _, i := range s.dups {
		ops = append(ops, op{kind: opDeleteEndpoint, reason: ReasonDuplicateOfLocal, ep: &s.o.View.Endpoints[i]})
	}
	want := s.d.SourceVIPEndpoint
	if want == nil {
		return ops
	}
	if _, ok := s.local[want.IP]; ok {
		return ops
	}
	create := op{kind: opCreateEndpoint, reason: ReasonSourceVIPMissing, gate: true, ip: want.IP, mac: want.MAC}
	return append(ops, s.deferIfWaiting(create))
}

// deferIfWaiting turns an op whose object failed recently into a deferral
// until its retry is due.
func (s *syncState) deferIfWaiting(o op) op {
	if len(s.a.retries) == 0 {
		return o
	}
	if k, ok := o.retryKey(); ok {
		if s.a.waiting(k) {
			o.kind, o.reason = opDefer, ReasonRetryNotDue
		}
	}
	return o
}

// matchRemoteEndpoints maps every desired remote endpoint it can to the
// endpoint holding its address: ours if it matches, a foreign one as it
// is. It returns the rest, for planRemoteEndpoints.
func (s *syncState) matchRemoteEndpoints() []engine.RemoteEndpoint {
	var todo []engine.RemoteEndpoint
	for _, want := range s.d.RemoteEndpoints.All() {
		if s.firstEPs[want.IP] {
			continue // planned by the first sync's phases
		}
		if !s.matchRemote(want) {
			todo = append(todo, want)
		}
	}
	return todo
}

// matchRemote maps want to the endpoint holding its IP, unless that is
// missing or one of ours that no longer matches.
func (s *syncState) matchRemote(want engine.RemoteEndpoint) bool {
	if _, ok := s.local[want.IP]; ok {
		return true
	}
	i, ok := s.remoteByIP.Get(want.IP)
	if !ok {
		return false
	}
	ep := s.o.View.Endpoints[i]
	// A foreign endpoint is used as it is; ours must match.
	if !remoteMatches(ep, want) && s.a.owned.OwnsEndpoint(ep) {
		return false
	}
	if !s.remembered[i] {
		s.a.epIDs.Set(want.IP, ep.ID)
	}
	s.resolved[i] = true
	if len(s.a.retries) > 0 {
		// A create that failed was carried out after all (it timed out),
		// or another's endpoint holds the address: nothing to retry.
		delete(s.a.retries, epRetryKey(want.IP))
	}
	return true
}

// planRemoteEndpoints creates the desired remote endpoints that no
// endpoint holds, and replaces the agent's stale ones, in IP order: most
// are matched as listed, in any order, and only the rest are sorted.
func (s *syncState) planRemoteEndpoints(todo []engine.RemoteEndpoint) []op {
	slices.SortFunc(todo, func(a, b engine.RemoteEndpoint) int { return a.IP.Compare(b.IP) })
	ops := make([]op, 0, len(todo))
	for _, want := range todo {
		ops = s.planRemote(ops, want)
	}
	return ops
}

// planRemote creates want's endpoint; one of ours holding the address but
// stale (e.g. the provider address moved) is replaced: endpoints cannot be
// modified. A stale one is deleted even while the create's retry waits.
func (s *syncState) planRemote(ops []op, want engine.RemoteEndpoint) []op {
	create := op{kind: opCreateEndpoint, reason: ReasonEndpointMissing, ip: want.IP, mac: want.MAC,
		pa: want.ProviderAddress, remote: true}
	i, stale := s.remoteByIP.Get(want.IP)
	if !stale {
		return append(ops, s.deferIfWaiting(create))
	}
	create.kind, create.reason, create.ep = opReplaceEndpoint, ReasonEndpointStale, &s.o.View.Endpoints[i]
	if d := s.deferIfWaiting(create); d.kind == opDefer {
		return append(ops, op{kind: opDeleteEndpoint, reason: ReasonEndpointStale, ip: want.IP, ep: create.ep}, d)
	}
	return append(ops, create)
}

func remoteMatches(ep hns.Endpoint, want engine.RemoteEndpoint) bool {
	return strings.EqualFold(ep.MAC, want.MAC) && ep.ProviderAddress == want.ProviderAddress
}
