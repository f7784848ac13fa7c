package hnstest

import (
	"errors"
	"testing"

	"github.com/winproxy/winproxy/agent/hns"
)

func modifyCases() []contractCase {
	return []contractCase{
		{"Backends", "lb-modify", modifyBackends},
		{"Missing", "lb-modify", modifyMissing},
		{"OntoTakenFrontend", "lb-modify-conflict", modifyOntoTakenFrontend},
	}
}

// modifyBackends adds a backend and removes one, as winkernel's update does when endpoints
// change. Reading back after each modify is the check that k/k #131466 failed on HNS 15.4.
func modifyBackends(t *testing.T, h *host) {
	pod, remote := h.local("pod", 10), h.remote("backend", remote4(5))
	created := lbSpec(10, pod)
	lb := h.createLB(created)

	for _, want := range []hns.LoadBalancer{lbSpec(10, pod, remote), lbSpec(10, remote)} {
		got, err := h.Client.ModifyLoadBalancer(h.ctx, lb.ID, want)
		if !checkCapability(t, "modify", h.caps.ModifyLoadBalancer, err) {
			checkLB(t, "get after a refused modify", created, h.getLB(lb.ID))
			return
		}
		if !hns.SameID(got.ID, lb.ID) {
			t.Errorf("modify changed the ID from %s to %s", lb.ID, got.ID)
		}
		checkLB(t, "modified", want, got)
		checkLB(t, "get after modify", want, h.getLB(lb.ID))
	}
}

func modifyMissing(t *testing.T, h *host) {
	_, err := h.Client.ModifyLoadBalancer(h.ctx, newGUID(), lbSpec(10, h.local("pod", 10)))
	if !errors.Is(err, hns.ErrLoadBalancerNotFound) {
		t.Errorf("modify of a missing load balancer: %v, want load balancer not found", err)
	}
}

func modifyOntoTakenFrontend(t *testing.T, h *host) {
	if !h.caps.ModifyLoadBalancer {
		t.Skipf("HNS %s cannot modify (see Backends)", h.version)
	}
	pod := h.local("pod", 10)
	a := h.createLB(lbSpec(10, pod))
	b := h.createLB(lbSpec(11, pod))
	if _, err := h.Client.ModifyLoadBalancer(h.ctx, b.ID, lbSpec(10, pod)); !hns.IsPortExists(err) {
		t.Errorf("modify onto another load balancer's frontend: %v, want port exists", err)
	}
	if _, err := h.Client.ModifyLoadBalancer(h.ctx, a.ID, lbSpec(10, pod)); err != nil {
		t.Errorf("modify keeping its own frontend: %v", err)
	}
}
