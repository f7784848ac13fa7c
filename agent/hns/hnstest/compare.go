package hnstest

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/winproxy/winproxy/agent/hns"
)

// endpointView is what a round trip must keep of an endpoint. IDs and MACs compare
// case-insensitively and addresses in any order: HNS prints GUIDs upper-case while hcsshim's
// guid.GUID prints lower-case, and no source fixes either order. PrefixLength is left out:
// remote endpoints carry none and the proxy never reads it (hns.Endpoint).
type endpointView struct {
	Name            string
	IPs             []string
	MAC             string
	Remote          bool
	ProviderAddress string
}

func viewEndpoint(e hns.Endpoint) endpointView {
	return endpointView{
		Name:            e.Name,
		IPs:             sortedAddrs(e.IPs),
		MAC:             strings.ToUpper(e.MAC),
		Remote:          e.Remote,
		ProviderAddress: addrString(e.ProviderAddress),
	}
}

// checkEndpoint fails when got is not want as created on network.
func checkEndpoint(t *testing.T, what string, want, got hns.Endpoint, network hns.Network) {
	t.Helper()
	if diff := cmp.Diff(viewEndpoint(want), viewEndpoint(got)); diff != "" {
		t.Errorf("%s (-created +read back):\n%s", what, diff)
	}
	if !hns.SameID(got.NetworkID, network.ID) {
		t.Errorf("%s: network %q, want %q", what, got.NetworkID, network.ID)
	}
}

// lbView is what a round trip must keep of a load balancer; backends compare as a set of
// case-insensitive IDs (lb-roundtrip).
type lbView struct {
	FrontendVIPs []string
	PortMapping  hns.PortMapping
	Flags        hns.LBFlags
	SourceVIP    string
	Backends     []hns.ID
}

func viewLB(lb hns.LoadBalancer) lbView {
	return lbView{
		FrontendVIPs: sortedAddrs(lb.FrontendVIPs),
		PortMapping:  lb.PortMapping,
		Flags:        lb.Flags,
		SourceVIP:    addrString(lb.SourceVIP),
		Backends:     idSet(lb.BackendEndpointIDs),
	}
}

// checkLB fails when got is not want.
func checkLB(t *testing.T, what string, want, got hns.LoadBalancer) {
	t.Helper()
	if diff := cmp.Diff(viewLB(want), viewLB(got)); diff != "" {
		t.Errorf("%s (-sent +read back):\n%s", what, diff)
	}
}

// idSet normalises IDs for comparison: canonical, sorted.
func idSet(ids []string) []hns.ID {
	out := make([]hns.ID, len(ids))
	for i, id := range ids {
		out[i] = hns.IDOf(id)
	}
	slices.Sort(out)
	return out
}

func sortedAddrs(as []netip.Addr) []string {
	out := make([]string, 0, len(as))
	for _, a := range as {
		out = append(out, addrString(a))
	}
	slices.Sort(out)
	return out
}

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}
