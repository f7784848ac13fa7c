package hnstest

import (
	"errors"
	"regexp"
	"testing"

	"github.com/winproxy/winproxy/agent/hns"
)

// assumptionCases check what the simulator answers and no source states: the first run on
// Windows settles each (docs/windows.md lists them as assumptions until one is observed).
func assumptionCases() []contractCase {
	return []contractCase{
		{"ModifyDocumentCarriesTheID", "assume-modify-document-id", modifyDocumentCarriesID},
		{"RemoteEndpointKeepsItsName", "assume-remote-endpoint-name", remoteEndpointKeepsName},
		{"IDEnumerationAnswer", "assume-id-enumeration-answer", idEnumerationAnswer},
		{"DeleteOfMissingObjects", "assume-delete-missing", deleteOfMissingObjects},
	}
}

// modifyDocumentCarriesID modifies with the load balancer's own ID in the document, as the
// Windows adapter sends it (hcn_windows.go ModifyLoadBalancer sets Id before Update).
func modifyDocumentCarriesID(t *testing.T, h *host) {
	if !h.caps.ModifyLoadBalancer {
		t.Skipf("HNS %s cannot modify (see Modify/Backends)", h.version)
	}
	pod, remote := h.local("pod", 10), h.remote("backend", remote4(5))
	lb := h.createLB(lbSpec(10, pod))
	want := lbSpec(10, pod, remote)
	want.ID = lb.ID
	got, err := h.Client.ModifyLoadBalancer(h.ctx, lb.ID, want)
	if err != nil {
		t.Fatalf("modify with the load balancer's ID in the document: %v", err)
	}
	if !hns.SameID(got.ID, lb.ID) {
		t.Errorf("modify changed the ID from %s to %s", lb.ID, got.ID)
	}
	checkLB(t, "get after modify", want, h.getLB(lb.ID))
}

// remoteEndpointKeepsName creates a remote endpoint with a name, as winproxy names every endpoint
// it creates (the winproxy- prefix is its proof of ownership), and reads the name back from a get
// by name and from the network's list.
func remoteEndpointKeepsName(t *testing.T, h *host) {
	ep := h.createEndpoint(h.remoteSpec("winproxy-contract", remote4(7)))
	byName, err := h.Client.GetEndpointByName(h.ctx, ep.Name)
	if err != nil || !hns.SameID(byName.ID, ep.ID) {
		t.Errorf("GetEndpointByName(%q) = %s, %v; want %s", ep.Name, byName.ID, err, ep.ID)
	}
	if listed, ok := h.listed(h.Network.ID)[hns.IDOf(ep.ID)]; !ok || listed.Name != ep.Name {
		t.Errorf("listed as %+v (found %v), want the name %q", listed, ok, ep.Name)
	}
}

// guidText is how the adapter hands out enumerated IDs: a GUID without braces.
var guidText = regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)

// idEnumerationAnswer checks the form of the ID enumerations' answer: every ID a GUID without
// braces, each once, the objects just created among them.
func idEnumerationAnswer(t *testing.T, h *host) {
	ep := h.remote("backend", remote4(8))
	lb := h.createLB(lbSpec(13, ep))
	for what, list := range map[string]func() (hns.IDList, error){
		"endpoint IDs":      func() (hns.IDList, error) { return h.Client.ListEndpointIDs(h.ctx, h.Network.ID) },
		"load balancer IDs": func() (hns.IDList, error) { return h.Client.ListLoadBalancerIDs(h.ctx) },
	} {
		ids, err := list()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		seen := map[hns.ID]bool{}
		for id := range ids.All() {
			if !guidText.MatchString(id) || seen[hns.IDOf(id)] {
				t.Errorf("%s: %q is not a GUID without braces, or comes twice", what, id)
			}
			seen[hns.IDOf(id)] = true
		}
		if !seen[hns.IDOf(ep.ID)] && !seen[hns.IDOf(lb.ID)] {
			t.Errorf("%s: %v holds neither %s nor %s", what, ids, ep.ID, lb.ID)
		}
	}
}

// deleteOfMissingObjects deletes a load balancer and an endpoint that do not exist (one never
// did, one was just deleted) and records HNS's exact answer: winproxy counts any answer as done
// once a lookup by ID does not find the object (ownership.Owned), but the code belongs in
// docs/windows.md.
func deleteOfMissingObjects(t *testing.T, h *host) {
	ep := h.remote("backend", remote4(9))
	if err := h.Client.DeleteEndpoint(h.ctx, ep.ID); err != nil {
		t.Fatalf("DeleteEndpoint: %v", err)
	}
	for what, err := range map[string]error{
		"a never created load balancer": h.Client.DeleteLoadBalancer(h.ctx, newGUID()),
		"a deleted endpoint":            h.Client.DeleteEndpoint(h.ctx, ep.ID),
		"a never created endpoint":      h.Client.DeleteEndpoint(h.ctx, newGUID()),
	} {
		var he *hns.Error
		code := hns.Code(0)
		if errors.As(err, &he) {
			code = he.Code
		}
		t.Logf("delete of %s: code %#x (%v)", what, uint32(code), err)
		if !hns.IsNotFound(err) {
			t.Errorf("delete of %s: %v, want not found (0x490 or 0x803B0002)", what, err)
		}
	}
}
