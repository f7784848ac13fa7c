package hns

import (
	"net/netip"
	"strings"
)

// EndpointNamePrefix marks the endpoints winproxy creates, visible in HNS.
// HNS keeps an endpoint's name for its lifetime and offers no way to change
// it, so the name is the proof that an endpoint is winproxy's: the ledger
// (agent/ownership) does not record endpoints.
const EndpointNamePrefix = "winproxy-"

// OwnedEndpointName is the name winproxy gives an endpoint it creates for ip.
func OwnedEndpointName(ip netip.Addr) string { return EndpointNamePrefix + ip.String() }

// HasOwnedName reports whether ep carries winproxy's name prefix.
func HasOwnedName(ep Endpoint) bool { return strings.HasPrefix(ep.Name, EndpointNamePrefix) }
