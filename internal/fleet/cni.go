package fleet

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
)

// The simulated CNI is Calico in VXLAN mode, as on most Windows clusters with overlay networking.
const (
	// NetworkName is the HNS network Calico creates.
	NetworkName = "Calico"
	// SourceVIPEndpointName is the HNS endpoint whose IP Calico reserves as the node's source VIP.
	SourceVIPEndpointName = "Calico_ep"
	// vxlanVSID is Calico's default VXLAN network identifier.
	vxlanVSID = 4096
	// podEndpointPrefix names the pod endpoints the simulated CNI creates, so it only ever
	// removes its own.
	podEndpointPrefix = "pod-"
)

// SourceVIP is the address Calico gives Calico_ep: the .2 of the node's pod CIDR.
func (n Node) SourceVIP() netip.Addr {
	p := netip.MustParsePrefix(n.PodCIDR)
	return p.Addr().Next().Next()
}

// OpenHost opens the simulated HNS host persisted at path.
func OpenHost(path string, n Node) (*sim.Sim, error) {
	profile, err := sim.ProfileByName(n.Profile)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	return sim.New(sim.WithStateFile(path), sim.WithProfile(profile))
}

// SeedHost prepares node n's simulated host at path as Calico would on a fresh Windows node: the
// overlay network with one remote-subnet route per other node (its pod CIDR, reached through its
// node IP), and the Calico_ep endpoint holding the source VIP. A host that already has the network
// is left as it is.
func SeedHost(path string, n Node, all []Node) error {
	h, err := OpenHost(path, n)
	if err != nil {
		return err
	}
	defer h.Close()
	if _, err := h.GetNetworkByName(context.Background(), NetworkName); err == nil {
		return nil
	}
	network := hns.Network{Name: NetworkName, Type: hns.NetworkTypeOverlay}
	for _, other := range all {
		if other.Name == n.Name {
			continue
		}
		network.RemoteSubnetRoutes = append(network.RemoteSubnetRoutes, hns.RemoteSubnetRoute{
			DestinationPrefix: netip.MustParsePrefix(other.PodCIDR),
			ProviderAddress:   netip.MustParseAddr(other.IP),
			IsolationID:       vxlanVSID,
		})
	}
	if _, err := h.AddNetwork(network); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	if _, err := h.AddLocalEndpoint(NetworkName, SourceVIPEndpointName, n.SourceVIP()); err != nil {
		return fmt.Errorf("node %s: creating %s: %w", n.Name, SourceVIPEndpointName, err)
	}
	return nil
}

// SyncPods makes the local pod endpoints of node n's host match the EndpointSlice endpoints that
// run on n, as the CNI does when pods start and stop. It returns how many endpoints it added and
// removed.
func SyncPods(ctx context.Context, c client.Reader, path string, n Node) (added, removed int, err error) {
	var slices discoveryv1.EndpointSliceList
	if err := c.List(ctx, &slices); err != nil {
		return 0, 0, err
	}
	want := map[netip.Addr]bool{}
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.NodeName == nil || *e.NodeName != n.Name || len(e.Addresses) == 0 {
				continue
			}
			if ip, err := netip.ParseAddr(e.Addresses[0]); err == nil {
				want[ip] = true
			}
		}
	}
	h, err := OpenHost(path, n)
	if err != nil {
		return 0, 0, err
	}
	defer h.Close()
	state, err := h.Snapshot()
	if err != nil {
		return 0, 0, err
	}
	have := map[netip.Addr]bool{}
	for _, ep := range state.Endpoints {
		if ep.Remote || !strings.HasPrefix(ep.Name, podEndpointPrefix) || len(ep.IPs) == 0 {
			continue
		}
		if want[ep.IPs[0]] {
			have[ep.IPs[0]] = true
			continue
		}
		if err := h.RemoveEndpoint(ep.ID); err != nil {
			return added, removed, err
		}
		removed++
	}
	for ip := range want {
		if have[ip] {
			continue
		}
		if _, err := h.AddLocalEndpoint(NetworkName, podEndpointPrefix+ip.String(), ip); err != nil {
			return added, removed, fmt.Errorf("node %s: pod endpoint %s: %w", n.Name, ip, err)
		}
		added++
	}
	return added, removed, nil
}
