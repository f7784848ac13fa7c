package hnstest

import (
	"errors"
	"strings"
	"testing"

	"github.com/winproxy/winproxy/agent/hns"
)

func hostCases() []contractCase {
	return []contractCase{
		{"Version", "version", versionReported},
		{"NetworkByName", "network-by-name", networkByName},
		{"NewIDs", "ids-are-guids", newIDs},
	}
}

func versionReported(t *testing.T, h *host) {
	if !h.caps.APIV2 {
		t.Errorf("HNS %s: want the V2 API (9.2 or later)", h.version)
	}
	t.Logf("HNS %s, Windows build %d, capabilities %+v", h.version, h.WindowsBuild, h.caps)
}

func networkByName(t *testing.T, h *host) {
	n, err := h.Client.GetNetworkByName(h.ctx, h.Network.Name)
	if err != nil {
		t.Fatalf("GetNetworkByName %q: %v", h.Network.Name, err)
	}
	if !hns.SameID(n.ID, h.Network.ID) || n.Name != h.Network.Name || !strings.EqualFold(string(n.Type), string(h.Network.Type)) {
		t.Errorf("GetNetworkByName = %s %q %s, want %s %q %s", n.ID, n.Name, n.Type, h.Network.ID, h.Network.Name, h.Network.Type)
	}
	if _, err := h.Client.GetNetworkByName(h.ctx, NamePrefix+"missing"); !errors.Is(err, hns.ErrNetworkNotFound) {
		t.Errorf("GetNetworkByName of a missing network: %v, want network not found", err)
	}
}

func newIDs(t *testing.T, h *host) {
	spec := h.remoteSpec("backend", remote4(5))
	ep := h.createEndpoint(spec)
	checkNewID(t, ep.ID, spec.ID)
	lbs := lbSpec(10, ep)
	lb := h.createLB(lbs)
	checkNewID(t, lb.ID, lbs.ID)
}
