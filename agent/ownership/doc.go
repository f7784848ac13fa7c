// Package ownership decides which HNS objects are winproxy's, and keeps the
// ledger that records its load balancers: a journal file on a host path,
// compacted as it goes, with disk space reserved ahead so that a full disk
// shows while every change so far is still written. Owned wraps an
// hns.Client so that the agent's deletes and modifies reach only what
// proves to be its own. It sits beside the HNS model (agent/hns), which
// has no notion of an owner.
//
// The agent must only delete HNS objects it created, after a restart it
// must recognise its own objects without writing anything, and neither may
// rest on a file alone: a lost file must not cost a blackout, and a line
// added to it must not let the agent delete a stranger's object. So an
// object proves to be winproxy's by what HNS itself holds:
//
//   - An endpoint by its name: every endpoint winproxy creates is named with
//     hns.EndpointNamePrefix ("winproxy-"), which HNS keeps for the endpoint's
//     lifetime and offers no way to change. Admins see it with hnsdiag.
//   - A load balancer, which has no name or tag field, by its content: the
//     Ledger, a small append-only journal on a host path, records each LB's
//     ID with the fingerprint of the content the agent created or last
//     wrote. Owned (the agent's writes) deletes or modifies an LB only as
//     listed, and only if its content matches its entry: an entry without
//     fingerprint, or an LB someone changed since, is refused
//     (hns.ErrNotOwned). The fingerprint is no secret; against someone who can
//     write the file and compute it, the folder's ACL (SecureLedgerDir) is
//     the protection, and such a person can delete the LB anyway.
//
// What the ledger lacks is rebuilt from HNS. An LB identical to one the
// agent wants (frontend, flags, port mapping, source VIP, backends) is
// adopted without a call, however it came to be unrecorded (the ledger lost,
// an earlier version's entry without fingerprint, kube-proxy's LB after a
// migration): that changes nothing on the data plane, where replacing it
// because it holds the agent's frontend, as winkernel does
// (docs/design/dataplane.md#foreign-load-balancers), would delete and recreate
// the same LB. A non-identical LB that does not prove to be winproxy's is
// foreign; the agent deletes it only when it blocks a frontend the agent
// must create (the same rule).
//
// Creating a load balancer and recording its ID cannot be one step, so
// Owned.CreateLoadBalancer first appends an intent (the fingerprint) and
// replaces it by the ID after the create, or drops it on a failure other
// than a timeout. A process killed in between leaves the intent; on the
// next sync Owned.Settle records the unrecorded LB matching it, even if the
// service changed meanwhile, and drops the rest. A modify records the
// contents before and after the call, so a kill in between leaves an LB
// still proven winproxy's. A delete's line is the one that may wait: it is
// written with the next append (an event's delete with the intent of the
// create replacing it) or at the end of the sync, and a kill before that
// leaves the entry of an ID HNS no longer lists, which the next list drops.
package ownership
