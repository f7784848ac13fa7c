// Package hns is winproxy's own model of the Windows Host Networking Service
// (HNS): networks, endpoints and load balancers, the capability set derived
// from the HNS version, the error vocabulary and the Client interface the
// agent programs against.
//
// Two implementations exist: a thin adapter over github.com/Microsoft/hcsshim/hcn
// (Windows only, NewWindows) and an in-memory simulator (package sim). No
// hcsshim type crosses this package's boundary, so swapping hcsshim for
// hnslib, or the simulator for the real thing, touches one file.
//
// # Ownership
//
// The agent must only delete HNS objects it created, and after a restart it
// must recognise its own objects without writing anything. HNS offers no
// free-form tags on load balancers, so ownership is recorded on two levels:
//
//   - A Ledger: a small append-only journal file kept by the agent (on a host
//     path, next to the agent's other state) listing the IDs of every load
//     balancer and endpoint the agent created. It is the authority for
//     "ours": Owned (a Client wrapper) records an ID after each successful
//     create, forgets it after a delete, and refuses to delete or modify an
//     ID that is not in the ledger (ErrNotOwned). Re-reading the ledger and
//     listing HNS costs zero writes.
//   - Endpoint names: every endpoint winproxy creates is named with the
//     EndpointNamePrefix ("winproxy-"). This survives in HNS itself, so the
//     agent's endpoints stay recognisable even if the ledger file is lost,
//     and admins can see them with hnsdiag. Load balancers have no name
//     field, hence the ledger.
//
// Both mechanisms work unchanged on Windows and against the simulator
// (including a simulator persisted to a file and shared between processes),
// because neither depends on implementation-specific storage.
//
// Creating a load balancer and recording its ID cannot be one step, so
// Owned.CreateLoadBalancer first appends an intent (a hash of the LB's
// content) and replaces it by the ID after the create, or drops it on
// failure. A process killed in between leaves the intent; on the next sync
// Owned.AdoptCreated records the unrecorded LB matching it and drops the
// rest. No other unrecorded LB is ever adopted, however identical to a
// desired one: kube-proxy's or an admin's stays foreign, and the agent
// deletes it only when it blocks a frontend the agent must create
// (winkernel reference §7.4). Residue: killed after the intent but before an
// identical foreign blocker was replaced, the agent adopts that blocker,
// which is what the replacement would have produced. A lost ledger proves
// no load balancer ours: each is then replaced once through §7.4.
package hns
