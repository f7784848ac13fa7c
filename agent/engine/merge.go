package engine

import (
	"fmt"
	"net/netip"
	"slices"

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

// frontKey is what makes two desired LBs collide in HNS.
type frontKey struct {
	family   v1alpha1.IPFamily
	vip      netip.Addr
	protocol uint32
	port     uint16
}

func frontOf(k LBKey) frontKey {
	return frontKey{family: k.Family, vip: k.VIP, protocol: k.Protocol, port: k.ExternalPort}
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
