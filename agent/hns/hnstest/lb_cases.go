package hnstest

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/winproxy/winproxy/agent/hns"
)

func loadBalancerCases() []contractCase {
	return []contractCase{
		{"RoundTrip", "lb-roundtrip", lbRoundTrip},
		{"Kinds", "lb-kinds", lbKinds},
		{"DSR", "lb-dsr", lbDSR},
		{"IPv6", "lb-ipv6", lbIPv6},
		{"NodePortBothFamilies", "lb-ipv6", nodePortBothFamilies},
		{"FamilyMismatch", "lb-family-mismatch", lbFamilyMismatch},
		{"SessionAffinity", "lb-session-affinity", lbSessionAffinity},
		{"PortExists", "lb-port-exists", lbPortExists},
		{"UnknownBackend", "lb-unknown-backend", lbUnknownBackend},
		{"NotFound", "lb-not-found", lbNotFound},
		{"LowerCaseIDs", "ids-case-insensitive", lbLowerCaseIDs},
		{"IDsOnly", "id-enumeration", lbIDs},
	}
}

func lbIDs(t *testing.T, h *host) {
	lb := h.createLB(lbSpec(12, h.local("pod", 12)))
	sameIDs(t, "load balancers", func() ([]string, []string, error) {
		ids, err := h.Client.ListLoadBalancerIDs(h.ctx)
		if err != nil {
			return nil, nil, err
		}
		lbs, err := h.Client.ListLoadBalancers(h.ctx)
		var listed []string
		for _, l := range lbs {
			listed = append(listed, l.ID)
		}
		return slices.Collect(ids.All()), listed, err
	}, lb.ID)
}

func lbRoundTrip(t *testing.T, h *host) {
	spec := lbSpec(10, h.local("pod", 10), h.remote("backend", remote4(5)))
	lb := h.createLB(spec)
	checkLB(t, "created", spec, lb)
	checkLB(t, "get", spec, h.getLB(lb.ID))
	listed, ok := h.listedLB(lb.ID)
	if !ok {
		t.Fatalf("load balancer %s not listed", lb.ID)
	}
	checkLB(t, "listed", spec, listed)

	if err := h.Client.DeleteLoadBalancer(h.ctx, lb.ID); err != nil {
		t.Fatalf("DeleteLoadBalancer: %v", err)
	}
	if _, err := h.Client.GetLoadBalancer(h.ctx, lb.ID); !errors.Is(err, hns.ErrLoadBalancerNotFound) {
		t.Errorf("get after delete: %v, want load balancer not found", err)
	}
	if _, ok := h.listedLB(lb.ID); ok {
		t.Errorf("deleted load balancer still listed")
	}
}

// lbKind is one shape winkernel programs (docs/design/dataplane.md#load-balancers),
// on its own frontend.
type lbKind struct {
	name     string
	vip      bool
	protocol uint32
	ext, int uint16
	flags    hns.LBFlags
	pmFlags  hns.PortMappingFlags
	noSVIP   bool
}

var lbKinds4 = []lbKind{
	{name: "ClusterIP", vip: true, protocol: hns.ProtocolTCP, ext: servicePort, int: targetPort},
	{name: "ClusterIP UDP", vip: true, protocol: hns.ProtocolUDP, ext: 53, int: 5353},
	{name: "ClusterIP without source VIP", vip: true, protocol: hns.ProtocolTCP, ext: servicePort, int: targetPort, noSVIP: true},
	{name: "ClusterIP DSR", vip: true, protocol: hns.ProtocolTCP, ext: servicePort, int: targetPort, flags: hns.LBFlagDSR},
	{name: "NodePort", protocol: hns.ProtocolTCP, ext: nodePort, int: targetPort, pmFlags: hns.PortMappingLocalRoutedVIP | hns.PortMappingVipExternalIP},
	{name: "NodePort externalTrafficPolicy Local", protocol: hns.ProtocolTCP, ext: nodePort + 1, int: targetPort, flags: hns.LBFlagDSR, pmFlags: hns.PortMappingLocalRoutedVIP | hns.PortMappingVipExternalIP},
	{name: "ExternalIP", vip: true, protocol: hns.ProtocolTCP, ext: servicePort, int: targetPort, pmFlags: hns.PortMappingVipExternalIP},
	{name: "Ingress preserve-destination", vip: true, protocol: hns.ProtocolTCP, ext: servicePort, int: targetPort, flags: hns.LBFlagDSR, pmFlags: hns.PortMappingVipExternalIP | hns.PortMappingUseMux | hns.PortMappingPreserveDIP},
	{name: "HealthCheck preserve-destination", vip: true, protocol: hns.ProtocolTCP, ext: healthPort, int: healthPort, pmFlags: hns.PortMappingUseMux | hns.PortMappingPreserveDIP},
	{name: "ILB", vip: true, protocol: hns.ProtocolTCP, ext: servicePort, int: targetPort, pmFlags: hns.PortMappingILB},
}

func lbKinds(t *testing.T, h *host) {
	pod, remote := h.local("pod", 10), h.remote("backend", remote4(5))
	for i, k := range lbKinds4 {
		t.Run(k.name, func(t *testing.T) {
			if k.flags&hns.LBFlagDSR != 0 && !h.caps.DSR {
				t.Skipf("HNS %s has no DSR (see DSR)", h.version)
			}
			spec := lbSpec(20+i, pod, remote)
			spec.PortMapping = hns.PortMapping{Protocol: k.protocol, InternalPort: k.int, ExternalPort: k.ext, Flags: k.pmFlags}
			spec.Flags = k.flags
			if !k.vip {
				spec.FrontendVIPs = nil
			}
			if k.noSVIP {
				spec.SourceVIP = netip.Addr{}
			}
			lb := h.createLB(spec)
			checkLB(t, "created", spec, lb)
			checkLB(t, "get", spec, h.getLB(lb.ID))
		})
	}
}

// checkCapability fails unless a create that needs a capability succeeded when HNS has it and
// was refused with E_NOTIMPL when it has not; it returns whether the create succeeded.
func checkCapability(t *testing.T, capability string, has bool, err error) bool {
	t.Helper()
	switch {
	case has && err != nil:
		t.Errorf("%s is supported by this HNS version, but: %v", capability, err)
	case !has && !hns.IsNotImplemented(err):
		t.Errorf("%s is not supported by this HNS version: got %v, want E_NOTIMPL", capability, err)
	}
	return err == nil
}

func lbDSR(t *testing.T, h *host) {
	spec := lbSpec(10, h.local("pod", 10))
	spec.Flags = hns.LBFlagDSR
	lb, err := h.tryCreateLB(spec)
	if checkCapability(t, "DSR", h.caps.DSR, err) {
		checkLB(t, "get", spec, h.getLB(lb.ID))
	}
}

// lbIPv6 creates an IPv6 ClusterIP load balancer. Where HNS lacks IPv6 the network is
// IPv4-only, so the refused request names an IPv4 backend: the version check comes first.
func lbIPv6(t *testing.T, h *host) {
	if h.caps.IPv6DualStack && !h.DualStack {
		t.Skip("the network is not dual-stack")
	}
	spec := lbSpec(0, h.local("pod", 10))
	spec.Flags = hns.LBFlagIPv6
	spec.FrontendVIPs = []netip.Addr{vip6(10)}
	if h.DualStack {
		spec.SourceVIP = sourceVIP6
		spec.BackendEndpointIDs = append(spec.BackendEndpointIDs, h.remote("backend", remote6(5)).ID)
	} else {
		spec.SourceVIP = netip.Addr{}
	}
	lb, err := h.tryCreateLB(spec)
	if checkCapability(t, "IPv6", h.caps.IPv6DualStack, err) {
		checkLB(t, "get", spec, h.getLB(lb.ID))
	}
}

func nodePortBothFamilies(t *testing.T, h *host) {
	if !h.caps.IPv6DualStack || !h.DualStack {
		t.Skip("needs IPv6 and a dual-stack network")
	}
	pod := h.local("pod", 10)
	for flags, sourceVIP := range map[hns.LBFlags]netip.Addr{0: sourceVIP4, hns.LBFlagIPv6: sourceVIP6} {
		spec := lbSpec(0, pod)
		spec.FrontendVIPs, spec.SourceVIP, spec.Flags = nil, sourceVIP, flags
		spec.PortMapping.ExternalPort = nodePort
		spec.PortMapping.Flags = hns.PortMappingLocalRoutedVIP | hns.PortMappingVipExternalIP
		if _, err := h.tryCreateLB(spec); err != nil {
			t.Errorf("NodePort load balancer with flags %d: %v", flags, err)
		}
	}
}

func lbFamilyMismatch(t *testing.T, h *host) {
	pod := h.local("pod", 10)
	v6flagV4VIP := lbSpec(10, pod)
	v6flagV4VIP.Flags, v6flagV4VIP.SourceVIP = hns.LBFlagIPv6, netip.Addr{}
	v4WithV6SourceVIP := lbSpec(11, pod)
	v4WithV6SourceVIP.SourceVIP = sourceVIP6
	for name, spec := range map[string]hns.LoadBalancer{
		"IPv6 flag with an IPv4 VIP":       v6flagV4VIP,
		"IPv4 VIP with an IPv6 source VIP": v4WithV6SourceVIP,
	} {
		if _, err := h.tryCreateLB(spec); !hns.IsInvalidIP(err) {
			t.Errorf("%s: %v, want invalid IP", name, err)
		}
	}
}

func lbSessionAffinity(t *testing.T, h *host) {
	pod := h.local("pod", 10)
	for i, d := range []hns.DistributionType{hns.DistributionSourceIPProtocol, hns.DistributionSourceIP} {
		spec := lbSpec(10+i, pod)
		spec.PortMapping.DistributionType = d
		lb, err := h.tryCreateLB(spec)
		if checkCapability(t, "session affinity", h.caps.SessionAffinity, err) {
			checkLB(t, "get", spec, h.getLB(lb.ID))
		}
	}
}

func lbPortExists(t *testing.T, h *host) {
	pod, other := h.local("pod", 10), h.local("other-pod", 11)
	base := lbSpec(10, pod)
	h.createLB(base)
	nodePortLB := lbSpec(0, pod)
	nodePortLB.FrontendVIPs, nodePortLB.PortMapping.ExternalPort = nil, nodePort
	h.createLB(nodePortLB)

	tests := []struct {
		name    string
		change  func(lb *hns.LoadBalancer)
		refused bool
	}{
		{"same frontend", func(*hns.LoadBalancer) {}, true},
		{"same frontend, other backends, flags and no source VIP", func(lb *hns.LoadBalancer) {
			lb.BackendEndpointIDs = []string{other.ID}
			lb.PortMapping.Flags = hns.PortMappingVipExternalIP
			lb.SourceVIP = netip.Addr{}
		}, true},
		{"same NodePort", func(lb *hns.LoadBalancer) { *lb = nodePortLB }, true},
		{"other external port", func(lb *hns.LoadBalancer) { lb.PortMapping.ExternalPort++ }, false},
		{"other internal port", func(lb *hns.LoadBalancer) { lb.PortMapping.InternalPort++ }, false},
		{"other protocol", func(lb *hns.LoadBalancer) { lb.PortMapping.Protocol = hns.ProtocolUDP }, false},
		{"other VIP", func(lb *hns.LoadBalancer) { lb.FrontendVIPs = []netip.Addr{vip4(11)} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := base
			tt.change(&spec)
			_, err := h.tryCreateLB(spec)
			if tt.refused != hns.IsPortExists(err) || (!tt.refused && err != nil) {
				t.Errorf("create %s: %v, want refused as port exists: %v", spec, err, tt.refused)
			}
		})
	}
}

func lbUnknownBackend(t *testing.T, h *host) {
	spec := lbSpec(10)
	spec.BackendEndpointIDs = []string{newGUID()}
	if _, err := h.tryCreateLB(spec); !errors.Is(err, hns.ErrEndpointNotFound) {
		t.Errorf("load balancer with a missing backend: %v, want endpoint not found", err)
	}
}

func lbNotFound(t *testing.T, h *host) {
	id := newGUID()
	if _, err := h.Client.GetLoadBalancer(h.ctx, id); !errors.Is(err, hns.ErrLoadBalancerNotFound) {
		t.Errorf("get of a missing load balancer: %v, want load balancer not found", err)
	}
	if err := h.Client.DeleteLoadBalancer(h.ctx, id); !hns.IsNotFound(err) {
		t.Errorf("delete of a missing load balancer: %v, want not found", err)
	}
}

func lbLowerCaseIDs(t *testing.T, h *host) {
	pod := h.local("pod", 10)
	spec := lbSpec(10)
	spec.BackendEndpointIDs = []string{strings.ToLower(pod.ID)}
	lb := h.createLB(spec)
	lower := strings.ToLower(lb.ID)
	got, err := h.Client.GetLoadBalancer(h.ctx, lower)
	if err != nil || !hns.SameID(got.ID, lb.ID) {
		t.Errorf("GetLoadBalancer(%s) = %s, %v; want %s", lower, got.ID, err, lb.ID)
	}
	checkLB(t, "backend named in lower case", spec, got)
	if err := h.Client.DeleteLoadBalancer(h.ctx, lower); err != nil {
		t.Errorf("DeleteLoadBalancer(%s): %v", lower, err)
	}
	if _, ok := h.listedLB(lb.ID); ok {
		t.Errorf("load balancer deleted by its lower-case ID is still listed")
	}
}
