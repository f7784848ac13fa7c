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
// An endpoint winproxy creates is named with EndpointNamePrefix
// ("winproxy-"), which HNS keeps for the endpoint's lifetime: the name is
// its proof of ownership. Load balancers have no name; what proves them
// winproxy's, the ledger recording them and the writes that enforce it are
// package agent/ownership.
package hns
