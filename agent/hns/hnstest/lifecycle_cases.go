package hnstest

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/winproxy/winproxy/agent/hns"
)

// Lifecycle cases: what HNS does to load balancers when what they point at goes away behind
// the agent's back. The agent's drift repair depends on the answers.
func lifecycleCases() []contractCase {
	return []contractCase{
		{"BackendDeleted", "lb-backend-deleted", backendDeleted},
		{"NetworkRecreated", "network-recreated", networkRecreated},
	}
}

func backendDeleted(t *testing.T, h *host) {
	pod, remote := h.local("pod", 10), h.remote("backend", remote4(5))
	lb := h.createLB(lbSpec(10, pod, remote))
	if err := h.Client.DeleteEndpoint(h.ctx, remote.ID); err != nil {
		t.Fatalf("deleting a backend of a load balancer: %v", err)
	}
	got := h.getLB(lb.ID)
	if diff := cmp.Diff(idSet([]string{pod.ID, remote.ID}), idSet(got.BackendEndpointIDs)); diff != "" {
		t.Errorf("backends after one was deleted (-before +after):\n%s", diff)
	}
}

func networkRecreated(t *testing.T, h *host) {
	pod := h.local("pod", 10)
	lb := h.createLB(lbSpec(10, pod))
	old := h.Network
	n, err := h.Harness.RecreateNetwork(h.ctx)
	if err != nil {
		t.Fatalf("recreating the network: %v", err)
	}
	h.Network = n
	if hns.SameID(n.ID, old.ID) {
		t.Errorf("the recreated network kept the ID %s", n.ID)
	}
	if got, err := h.Client.GetNetworkByName(h.ctx, old.Name); err != nil || !hns.SameID(got.ID, n.ID) {
		t.Errorf("GetNetworkByName after recreation = %s, %v; want %s", got.ID, err, n.ID)
	}
	for _, id := range []string{old.ID, n.ID} {
		if eps := h.listed(id); len(eps) != 0 {
			t.Errorf("ListEndpoints(%s) after recreation = %v, want none", id, eps)
		}
	}
	if _, err := h.Client.GetEndpointByName(h.ctx, pod.Name); !errors.Is(err, hns.ErrEndpointNotFound) {
		t.Errorf("the pod's endpoint after its network was deleted: %v, want endpoint not found", err)
	}
	if got := h.getLB(lb.ID); !cmp.Equal(idSet(got.BackendEndpointIDs), idSet([]string{pod.ID})) {
		t.Errorf("load balancer backends after recreation = %v, want the vanished %s", got.BackendEndpointIDs, pod.ID)
	}
}
