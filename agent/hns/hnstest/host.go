package hnstest

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"net/netip"
	"regexp"
	"testing"

	"github.com/winproxy/winproxy/agent/hns"
)

// host is one case's handle on the implementation under test: the Env, the HNS version and
// helpers that create objects and register their removal.
type host struct {
	Env
	t       *testing.T
	ctx     context.Context
	version hns.Version
	caps    hns.Capabilities
}

func newHost(t *testing.T, env Env) *host {
	t.Helper()
	h := &host{Env: env, t: t, ctx: t.Context()}
	v, err := env.Client.Version(h.ctx)
	if err != nil {
		t.Fatalf("Version: %v", err)
	}
	h.version, h.caps = v, hns.CapabilitiesFor(v)
	return h
}

// cleanupCtx outlives the case: t.Context is cancelled before cleanups run.
func (h *host) cleanupCtx() context.Context { return context.WithoutCancel(h.ctx) }

// duplicateIPQuirk is the claim for this Windows release; ok is false when no supported release
// has this build.
func (h *host) duplicateIPQuirk() (quirk, ok bool) {
	r, ok := hns.ReleaseOfBuild(h.WindowsBuild)
	return r.DuplicateIPQuirk, ok
}

// --- endpoints ---

// remoteSpec is a remote endpoint as winkernel creates it: conjured MAC, and on overlay the PA
// of the node hosting it. Its ID and network are decoys that the create must ignore.
func (h *host) remoteSpec(name string, ips ...netip.Addr) hns.Endpoint {
	ep := hns.Endpoint{
		ID:        newGUID(),
		Name:      NamePrefix + name,
		NetworkID: newGUID(),
		IPs:       ips,
		MAC:       hns.ConjureMAC(ips[0]),
		Remote:    true,
	}
	if h.Network.IsOverlay() {
		ep.ProviderAddress = providerAddress
	}
	return ep
}

// tryCreateEndpoint creates ep on the case's network and registers its removal.
func (h *host) tryCreateEndpoint(ep hns.Endpoint) (hns.Endpoint, error) {
	got, err := h.Client.CreateEndpoint(h.ctx, h.Network.ID, ep)
	if err == nil {
		h.removeEndpointLater(got.ID)
	}
	return got, err
}

func (h *host) createEndpoint(ep hns.Endpoint) hns.Endpoint {
	h.t.Helper()
	got, err := h.tryCreateEndpoint(ep)
	if err != nil {
		h.t.Fatalf("CreateEndpoint %s: %v", ep, err)
	}
	return got
}

func (h *host) remote(name string, ips ...netip.Addr) hns.Endpoint {
	h.t.Helper()
	return h.createEndpoint(h.remoteSpec(name, ips...))
}

func (h *host) tryLocal(name string, ips ...netip.Addr) (hns.Endpoint, error) {
	got, err := h.Harness.AddLocalEndpoint(h.ctx, NamePrefix+name, ips...)
	if err == nil {
		h.removeEndpointLater(got.ID)
	}
	return got, err
}

// local creates a pod's endpoint the way the CNI does, with an IPv6 address too when the
// network is dual-stack.
func (h *host) local(name string, n int) hns.Endpoint {
	h.t.Helper()
	ips := []netip.Addr{local4(n)}
	if h.DualStack {
		ips = append(ips, local6(n))
	}
	got, err := h.tryLocal(name, ips...)
	if err != nil {
		h.t.Fatalf("AddLocalEndpoint %s %v: %v", name, ips, err)
	}
	return got
}

func (h *host) removeEndpointLater(id string) {
	h.t.Cleanup(func() {
		if err := h.Client.DeleteEndpoint(h.cleanupCtx(), id); err != nil && !hns.IsNotFound(err) {
			h.t.Errorf("cleanup: endpoint %s left behind: %v", id, err)
		}
	})
}

// listed returns the network's endpoints by upper-cased ID.
func (h *host) listed(networkID string) map[hns.ID]hns.Endpoint {
	h.t.Helper()
	eps, err := h.Client.ListEndpoints(h.ctx, networkID)
	if err != nil {
		h.t.Fatalf("ListEndpoints %s: %v", networkID, err)
	}
	out := map[hns.ID]hns.Endpoint{}
	for _, ep := range eps {
		out[hns.IDOf(ep.ID)] = ep
	}
	return out
}

// --- load balancers ---

// lbSpec is a ClusterIP load balancer on vip4(n) with the given backends, as winkernel sends
// it: one TCP port mapping, the node's source VIP. Its ID is a decoy the create must ignore.
func lbSpec(n int, backends ...hns.Endpoint) hns.LoadBalancer {
	lb := hns.LoadBalancer{
		ID:           newGUID(),
		FrontendVIPs: []netip.Addr{vip4(n)},
		PortMapping:  hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: targetPort, ExternalPort: servicePort},
		SourceVIP:    sourceVIP4,
	}
	for _, b := range backends {
		lb.BackendEndpointIDs = append(lb.BackendEndpointIDs, b.ID)
	}
	return lb
}

func (h *host) tryCreateLB(lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	got, err := h.Client.CreateLoadBalancer(h.ctx, lb)
	if err == nil {
		h.removeLBLater(got.ID)
	}
	return got, err
}

func (h *host) createLB(lb hns.LoadBalancer) hns.LoadBalancer {
	h.t.Helper()
	got, err := h.tryCreateLB(lb)
	if err != nil {
		h.t.Fatalf("CreateLoadBalancer %s: %v", lb, err)
	}
	return got
}

// removeLBLater registers the removal; load balancers go before their backends because
// cleanups run last-registered first and backends are created before the load balancer.
func (h *host) removeLBLater(id string) {
	h.t.Cleanup(func() {
		if err := h.Client.DeleteLoadBalancer(h.cleanupCtx(), id); err != nil && !hns.IsNotFound(err) {
			h.t.Errorf("cleanup: load balancer %s left behind: %v", id, err)
		}
	})
}

func (h *host) getLB(id string) hns.LoadBalancer {
	h.t.Helper()
	lb, err := h.Client.GetLoadBalancer(h.ctx, id)
	if err != nil {
		h.t.Fatalf("GetLoadBalancer %s: %v", id, err)
	}
	return lb
}

// listedLB finds a load balancer in ListLoadBalancers; other components' load balancers may
// be listed too on a real host.
func (h *host) listedLB(id string) (hns.LoadBalancer, bool) {
	h.t.Helper()
	lbs, err := h.Client.ListLoadBalancers(h.ctx)
	if err != nil {
		h.t.Fatalf("ListLoadBalancers: %v", err)
	}
	for _, lb := range lbs {
		if hns.SameID(lb.ID, id) {
			return lb, true
		}
	}
	return hns.LoadBalancer{}, false
}

// --- IDs ---

var guidRE = regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)

// checkNewID fails unless id is a GUID other than the decoy the request carried.
func checkNewID(t *testing.T, id, decoy string) {
	t.Helper()
	if !guidRE.MatchString(id) || hns.SameID(id, decoy) {
		t.Errorf("ID %q: want a new GUID assigned by HNS, not the request's %q", id, decoy)
	}
}

// newGUID returns a random GUID no object has: IDs of missing objects and decoys.
func newGUID() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%08X-%04X-%04X-%04X-%012X", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
