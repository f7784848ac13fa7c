package hnstest

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/winproxy/winproxy/agent/hns"
)

func endpointCases() []contractCase {
	return []contractCase{
		{"RemoteRoundTrip", "endpoint-roundtrip", remoteRoundTrip},
		{"RemoteDualStack", "endpoint-roundtrip", remoteDualStack},
		{"ProviderAddress", "endpoint-provider-address", remoteProviderAddress},
		{"ListPerNetwork", "endpoint-list-per-network", listPerNetwork},
		{"IDsOnly", "id-enumeration", endpointIDs},
		{"ByName", "endpoint-by-name", endpointByName},
		{"Delete", "endpoint-delete", deleteEndpoint},
		{"OnMissingNetwork", "endpoint-on-missing-network", endpointOnMissingNetwork},
		{"DuplicateIP", "endpoint-duplicate-ip", duplicateIP},
		{"AddressLimits", "endpoint-address-limits", addressLimits},
		{"LowerCaseID", "ids-case-insensitive", endpointLowerCaseID},
	}
}

func remoteRoundTrip(t *testing.T, h *host) {
	spec := h.remoteSpec("backend", remote4(5))
	got := h.createEndpoint(spec)
	checkEndpoint(t, "created", spec, got, h.Network)
	listed, ok := h.listed(h.Network.ID)[hns.IDOf(got.ID)]
	if !ok {
		t.Fatalf("endpoint %s not listed on its network", got.ID)
	}
	checkEndpoint(t, "listed", spec, listed, h.Network)
	// Either case is correct; the agent's model keeps a remote endpoint in brief only if the MAC
	// comes back in the case it was sent or all in upper case (agent/apply/brief.go), and no source
	// says which HNS answers.
	t.Logf("MAC sent %q, answered %q on create and %q in the list; prefix length answered %d", spec.MAC, got.MAC, listed.MAC, listed.PrefixLength)
}

func remoteDualStack(t *testing.T, h *host) {
	if !h.DualStack {
		t.Skip("the network is not dual-stack")
	}
	spec := h.remoteSpec("backend", remote4(6), remote6(6))
	got := h.createEndpoint(spec)
	checkEndpoint(t, "created", spec, got, h.Network)
	checkEndpoint(t, "listed", spec, h.listed(h.Network.ID)[hns.IDOf(got.ID)], h.Network)
}

func remoteProviderAddress(t *testing.T, h *host) {
	if !h.Network.IsOverlay() {
		t.Skip("ProviderAddress policies belong to overlay networks (winkernel hns.go createEndpoint)")
	}
	got := h.remote("backend", remote4(7))
	if got.ProviderAddress != providerAddress {
		t.Errorf("created: PA %v, want %v", got.ProviderAddress, providerAddress)
	}
	if l := h.listed(h.Network.ID)[hns.IDOf(got.ID)]; l.ProviderAddress != providerAddress {
		t.Errorf("listed: PA %v, want %v", l.ProviderAddress, providerAddress)
	}
}

func endpointIDs(t *testing.T, h *host) {
	pod := h.local("pod", 11)
	remote := h.remote("backend", remote4(8))
	sameIDs(t, "endpoints", func() ([]string, []string, error) {
		ids, err := h.Client.ListEndpointIDs(h.ctx, h.Network.ID)
		if err != nil {
			return nil, nil, err
		}
		var listed []string
		for id := range h.listed(h.Network.ID) {
			listed = append(listed, string(id))
		}
		return slices.Collect(ids.All()), listed, nil
	}, pod.ID, remote.ID)
	if ids, err := h.Client.ListEndpointIDs(h.ctx, newGUID()); err != nil || ids.Len() != 0 {
		t.Errorf("ListEndpointIDs(unknown network) = %v, %v; want none", ids, err)
	}
}

// sameIDs checks that an ID enumeration names exactly what the matching list lists, and the
// given objects. On a real host other components may create or delete objects in between, so a
// mismatch is tried again once.
func sameIDs(t *testing.T, what string, both func() (ids, listed []string, err error), want ...string) {
	t.Helper()
	var ids, listed []string
	for range 2 {
		var err error
		if ids, listed, err = both(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if hns.SameIDs(ids, listed) {
			break
		}
	}
	if !hns.SameIDs(ids, listed) {
		t.Errorf("%s: IDs enumerated %v, listed %v", what, ids, listed)
	}
	for _, id := range want {
		if !slices.ContainsFunc(ids, func(got string) bool { return strings.EqualFold(got, id) }) {
			t.Errorf("%s: %s not enumerated", what, id)
		}
	}
}

func listPerNetwork(t *testing.T, h *host) {
	pod := h.local("pod", 10)
	remote := h.remote("backend", remote4(5))
	listed := h.listed(h.Network.ID)
	if len(listed) != 2 {
		t.Errorf("ListEndpoints(network) = %v, want exactly the pod %s and the remote %s", listed, pod.ID, remote.ID)
	}
	if l, ok := listed[hns.IDOf(pod.ID)]; !ok || l.Remote || l.Name != pod.Name {
		t.Errorf("pod endpoint listed as %v (present %v), want local and named %q", l, ok, pod.Name)
	}
	if l, ok := listed[hns.IDOf(remote.ID)]; !ok || !l.Remote {
		t.Errorf("remote endpoint listed as %v (present %v), want remote", l, ok)
	}
	if other := h.listed(newGUID()); len(other) != 0 {
		t.Errorf("ListEndpoints(unknown network) = %v, want none", other)
	}
	all := h.listed("")
	for _, ep := range []hns.Endpoint{pod, remote} {
		if _, ok := all[hns.IDOf(ep.ID)]; !ok {
			t.Errorf("ListEndpoints(\"\") misses %s", ep.ID)
		}
	}
}

func endpointByName(t *testing.T, h *host) {
	pod := h.local("pod", 10)
	remote := h.remote("backend", remote4(5))
	for _, want := range []hns.Endpoint{pod, remote} {
		got, err := h.Client.GetEndpointByName(h.ctx, want.Name)
		if err != nil || !hns.SameID(got.ID, want.ID) || got.Remote != want.Remote {
			t.Errorf("GetEndpointByName %q = %v, %v; want %s", want.Name, got, err, want)
		}
	}
	if _, err := h.Client.GetEndpointByName(h.ctx, NamePrefix+"missing"); !errors.Is(err, hns.ErrEndpointNotFound) {
		t.Errorf("GetEndpointByName of a missing name: %v, want endpoint not found", err)
	}
}

func deleteEndpoint(t *testing.T, h *host) {
	ep := h.remote("backend", remote4(5))
	if err := h.Client.DeleteEndpoint(h.ctx, ep.ID); err != nil {
		t.Fatalf("DeleteEndpoint: %v", err)
	}
	if _, ok := h.listed(h.Network.ID)[hns.IDOf(ep.ID)]; ok {
		t.Errorf("deleted endpoint still listed")
	}
	if _, err := h.Client.GetEndpointByName(h.ctx, ep.Name); !errors.Is(err, hns.ErrEndpointNotFound) {
		t.Errorf("GetEndpointByName after delete: %v, want endpoint not found", err)
	}
	if err := h.Client.DeleteEndpoint(h.ctx, ep.ID); !errors.Is(err, hns.ErrEndpointNotFound) {
		t.Errorf("second delete: %v, want endpoint not found", err)
	}
}

func endpointOnMissingNetwork(t *testing.T, h *host) {
	_, err := h.Client.CreateEndpoint(h.ctx, newGUID(), h.remoteSpec("backend", remote4(5)))
	if !errors.Is(err, hns.ErrNetworkNotFound) {
		t.Errorf("CreateEndpoint on a missing network: %v, want network not found", err)
	}
}

func duplicateIP(t *testing.T, h *host) {
	quirk, ok := h.duplicateIPQuirk()
	if !ok {
		t.Skipf("the simulator makes no claim for Windows build %d", h.WindowsBuild)
	}
	pod := h.local("pod", 10)
	_, err := h.tryCreateEndpoint(h.remoteSpec("shadow", pod.IPs[0]))
	checkAllowed(t, "remote endpoint with a local endpoint's IP", quirk, err)

	_, err = h.tryLocal("pod-again", pod.IPs[0])
	checkAllowed(t, "second local endpoint with the same IP", false, err)

	remote := h.remote("moved", local4(11))
	_, err = h.tryLocal("pod-moved-here", remote.IPs[0])
	checkAllowed(t, "local endpoint with a remote endpoint's IP", quirk, err)
}

// checkAllowed fails unless err is nil when allowed, and already-exists otherwise.
func checkAllowed(t *testing.T, what string, allowed bool, err error) {
	t.Helper()
	switch {
	case allowed && err != nil:
		t.Errorf("%s: %v, want accepted", what, err)
	case !allowed && !hns.IsPortExists(err):
		t.Errorf("%s: %v, want refused as already exists", what, err)
	}
}

func addressLimits(t *testing.T, h *host) {
	refused := []struct {
		name string
		ep   hns.Endpoint
	}{
		{"two IPv4 addresses", h.remoteSpec("two-v4", remote4(5), remote4(6))},
		{"ProviderAddress on a local endpoint", hns.Endpoint{Name: NamePrefix + "local-pa", IPs: []netip.Addr{local4(12)}, ProviderAddress: providerAddress}},
	}
	for _, tt := range refused {
		if _, err := h.tryCreateEndpoint(tt.ep); !hns.IsInvalidIP(err) {
			t.Errorf("%s: %v, want invalid IP", tt.name, err)
		}
	}
}

func endpointLowerCaseID(t *testing.T, h *host) {
	ep := h.remote("backend", remote4(5))
	if err := h.Client.DeleteEndpoint(h.ctx, strings.ToLower(ep.ID)); err != nil {
		t.Fatalf("DeleteEndpoint(%s): %v", strings.ToLower(ep.ID), err)
	}
	if _, ok := h.listed(h.Network.ID)[hns.IDOf(ep.ID)]; ok {
		t.Errorf("endpoint deleted by its lower-case ID is still listed")
	}
}
