package engine

import (
	"fmt"
	"slices"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// How the services' contributions combine into one Desired
// (docs/design/dataplane.md#one-frontend-one-load-balancer). Compute and
// Incremental apply the same rules:
//   - LBs that HNS would see as one frontend (frontKey) cannot all be
//     programmed: the smallest key wins (LBKey.Less), the others are left
//     out and reported as FrontendConflict;
//   - a health-check LB, which belongs to no service, has the settings of
//     the sharing service with the smallest "namespace/name", whatever the
//     order services are seen in;
//   - a remote endpoint wanted both as a backend and as a service VIP is the
//     backend's.

// frontKey is what makes two desired LBs collide: HNS's frontend without
// the internal port. It is stricter than HNS, which refuses a second LB
// only when the internal port is the same too (hns.Frontend): two LBs that
// differ in nothing else would both be created, and a client's packet,
// which carries the VIP, protocol and external port but no internal port,
// would reach whichever HNS picks. So the engine programs one of them and
// reports the others.
type frontKey = hns.Frontend

func frontOf(k LBKey) frontKey {
	return hns.Frontend{VIP: k.VIP, Protocol: k.Protocol, ExternalPort: k.ExternalPort, IPv6: k.Family == FamilyIPv6}
}

// claim is what tells apart the keys claiming one frontend: a key without
// its frontend. The Incremental keeps the claims of every frontend (20,000
// at 10k services), 40 bytes each where the key is 64. A claim is never the
// zero value (a key's family and kind are never zero), so a smallSet holds
// it.
type claim struct {
	service, port string
	family        Family
	kind          Kind
}

func claimOf(k LBKey) claim {
	return claim{service: k.Service, port: k.Port, family: k.Family, kind: k.Kind}
}

// key is the key of c on frontend fk.
func (c claim) key(fk frontKey) LBKey {
	return LBKey{Service: c.service, Port: c.port, VIP: fk.VIP, Protocol: fk.Protocol, ExternalPort: fk.ExternalPort,
		Family: c.family, Kind: c.kind}
}

// claimants are the keys of the claims cs on frontend fk, in a new slice.
func claimants(fk frontKey, cs smallSet[claim]) []LBKey {
	if cs.empty() {
		return nil
	}
	var more []claim
	if cs.more != nil {
		more = *cs.more
	}
	keys := make([]LBKey, 0, 1+len(more))
	keys = append(keys, cs.first.key(fk))
	for _, c := range more {
		keys = append(keys, c.key(fk))
	}
	return keys
}

// frontendWinner sorts keys, all of one frontend, and returns the one that
// is programmed.
func frontendWinner(keys []LBKey) LBKey {
	slices.SortFunc(keys, LBKey.Compare)
	return keys[0]
}

// conflictProblem reports a key left out for winner; service is the key's,
// or for a shared LB the service whose settings it has.
func conflictProblem(k, winner LBKey, service string) Problem {
	return Problem{Service: service, Reason: v1alpha1.ReasonFrontendConflict,
		Message: fmt.Sprintf("%s is not programmed: its frontend is already claimed by %s", k, winner)}
}

// preferRemote says whether re replaces cur for the same address: a
// backend's endpoint wins over a service VIP's.
func preferRemote(cur, re RemoteEndpoint) bool {
	return !re.ServiceVIP || cur.ServiceVIP
}
