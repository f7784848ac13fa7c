//go:build hnsintegration

package hnstest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/Microsoft/hcsshim/hcn"
	"golang.org/x/sys/windows"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/hnstest"
)

// Knobs of the run, from the environment (docs/windows.md).
const (
	// envNetworkType is L2Bridge (the default) or Overlay.
	envNetworkType = "WINPROXY_HNS_NETWORK_TYPE"
	// envAdapter names the host adapter the network binds to; empty lets HNS choose.
	envAdapter = "WINPROXY_HNS_ADAPTER"
)

// overlayVSID isolates the overlay network; 5000 is what hcsshim's own overlay test network
// uses (hcn/hcnutils_test.go CreateTestOverlayNetwork), above the 4096 floor of flannel's VNIs.
const overlayVSID = 5000

// lab is this machine's HNS with one throw-away network, shared by the cases one after the
// other (each case removes what it created). Why the network is L2Bridge by default: HNS
// programs load balancers into the VFP switch extension, which L2Bridge and Overlay networks
// enable and the default NAT network does not; of the two, only L2Bridge is dual-stack, so
// the IPv6 cases run. The network is created non-persistent (hcn.EnableNonPersistent), so
// even a run killed half-way leaves nothing after a reboot, and a sweep removes leftovers
// before and after the run.
type lab struct {
	client    hns.Client
	version   hns.Version
	build     int
	typ       hcn.NetworkType
	adapter   string
	dualStack bool
	network   *hcn.HostComputeNetwork
}

func openLab(t *testing.T) *lab {
	t.Helper()
	typ, err := networkType(os.Getenv(envNetworkType))
	if err != nil {
		t.Fatal(err)
	}
	client := hns.NewWindows()
	v, err := client.Version(t.Context())
	if err != nil {
		t.Fatalf("reading the HNS version: %v\nThe suite needs the Containers feature (HNS running) and an elevated shell: see docs/windows.md.", err)
	}
	l := &lab{
		client:    client,
		version:   v,
		build:     int(windows.RtlGetVersion().BuildNumber),
		typ:       typ,
		adapter:   os.Getenv(envAdapter),
		dualStack: typ == hcn.L2Bridge && hns.CapabilitiesFor(v).IPv6DualStack,
	}
	if n := sweep(t); n > 0 {
		t.Logf("removed %d objects an earlier run left behind", n)
	}
	t.Cleanup(func() {
		// The cases removed their objects; only the network should be left.
		if n := sweep(t); n > 1 {
			t.Errorf("the run left %d objects besides its network (removed now)", n-1)
		}
	})
	if err := l.createNetwork(); err != nil {
		t.Fatalf("creating the %s network: %v", typ, err)
	}
	return l
}

func networkType(s string) (hcn.NetworkType, error) {
	switch {
	case s == "" || strings.EqualFold(s, string(hcn.L2Bridge)):
		return hcn.L2Bridge, nil
	case strings.EqualFold(s, string(hcn.Overlay)):
		return hcn.Overlay, nil
	}
	return "", fmt.Errorf("%s=%q: want L2Bridge or Overlay", envNetworkType, s)
}

// env is the Fixture: every case gets the shared network, created again if a case that
// recreates it failed half-way.
func (l *lab) env(t *testing.T) hnstest.Env {
	t.Helper()
	if l.network == nil {
		if err := l.createNetwork(); err != nil {
			t.Fatalf("creating the %s network: %v", l.typ, err)
		}
	}
	return hnstest.Env{
		Client:       l.client,
		Network:      hns.Network{ID: l.network.Id, Name: l.network.Name, Type: hns.NetworkType(l.network.Type)},
		DualStack:    l.dualStack,
		WindowsBuild: l.build,
		Harness:      l,
	}
}

func (l *lab) createNetwork() error {
	subnets := []hcn.Subnet{subnet(hnstest.Subnet4, hnstest.Gateway4, "0.0.0.0/0")}
	if l.dualStack {
		subnets = append(subnets, subnet(hnstest.Subnet6, hnstest.Gateway6, "::/0"))
	}
	n := &hcn.HostComputeNetwork{
		Name:          hnstest.NamePrefix + "net",
		Type:          l.typ,
		Flags:         hcn.EnableNonPersistent,
		SchemaVersion: hcn.V2SchemaVersion(),
	}
	if l.typ == hcn.Overlay {
		vsid, err := policy(hcn.SubnetPolicy{Type: hcn.VSID}, hcn.VsidPolicySetting{IsolationId: overlayVSID})
		if err != nil {
			return err
		}
		subnets[0].Policies = append(subnets[0].Policies, vsid)
	}
	if l.adapter != "" {
		settings, err := json.Marshal(hcn.NetAdapterNameNetworkPolicySetting{NetworkAdapterName: l.adapter})
		if err != nil {
			return err
		}
		n.Policies = append(n.Policies, hcn.NetworkPolicy{Type: hcn.NetAdapterName, Settings: settings})
	}
	n.Ipams = []hcn.Ipam{{Type: "Static", Subnets: subnets}}
	created, err := n.Create()
	if err != nil {
		return err
	}
	l.network = created
	return nil
}

func subnet(p netip.Prefix, gateway netip.Addr, defaultRoute string) hcn.Subnet {
	return hcn.Subnet{
		IpAddressPrefix: p.String(),
		Routes:          []hcn.Route{{NextHop: gateway.String(), DestinationPrefix: defaultRoute}},
	}
}

// policy renders a subnet policy with its settings, as hcn.Subnet.Policies holds them.
func policy(p hcn.SubnetPolicy, settings any) (json.RawMessage, error) {
	raw, err := json.Marshal(settings)
	if err != nil {
		return nil, err
	}
	p.Settings = raw
	return json.Marshal(p)
}

// AddLocalEndpoint creates the endpoint through the adapter: its CreateEndpoint is the same
// hcn call a CNI makes for a pod (network.CreateEndpoint without the remote flag), and its
// errors come back classified, which the duplicate-IP case needs.
func (l *lab) AddLocalEndpoint(ctx context.Context, name string, ips ...netip.Addr) (hns.Endpoint, error) {
	return l.client.CreateEndpoint(ctx, l.network.Id, hns.Endpoint{Name: name, IPs: ips, PrefixLength: uint8(hnstest.Subnet4.Bits())})
}

// RecreateNetwork deletes the network as a CNI does on restart, letting HNS decide what goes
// with it, and creates it again.
func (l *lab) RecreateNetwork(context.Context) (hns.Network, error) {
	if err := l.network.Delete(); err != nil {
		return hns.Network{}, fmt.Errorf("deleting network %s: %w", l.network.Id, err)
	}
	l.network = nil
	if err := l.createNetwork(); err != nil {
		return hns.Network{}, err
	}
	return hns.Network{ID: l.network.Id, Name: l.network.Name, Type: hns.NetworkType(l.network.Type)}, nil
}

// sweep removes what this suite left on the host, and only that: networks named with
// hnstest.NamePrefix, the endpoints on them or so named, and the load balancers that name
// such an endpoint or carry an address of the suite's plan. It returns how many it removed.
func sweep(t *testing.T) int {
	t.Helper()
	nets, err := hcn.ListNetworks()
	if err != nil {
		t.Errorf("sweep: listing networks: %v", err)
		return 0
	}
	ourNets := map[string]hcn.HostComputeNetwork{}
	for _, n := range nets {
		if strings.HasPrefix(n.Name, hnstest.NamePrefix) {
			ourNets[strings.ToUpper(n.Id)] = n
		}
	}
	eps, err := hcn.ListEndpoints()
	if err != nil {
		t.Errorf("sweep: listing endpoints: %v", err)
		return 0
	}
	ourEPs := map[string]hcn.HostComputeEndpoint{}
	for _, ep := range eps {
		if _, ok := ourNets[strings.ToUpper(ep.HostComputeNetwork)]; ok || strings.HasPrefix(ep.Name, hnstest.NamePrefix) {
			ourEPs[strings.ToUpper(ep.Id)] = ep
		}
	}
	lbs, err := hcn.ListLoadBalancers()
	if err != nil {
		t.Errorf("sweep: listing load balancers: %v", err)
		return 0
	}
	removed := 0
	remove := func(what, id string, del func() error) {
		if err := del(); err != nil {
			t.Errorf("sweep: removing %s %s: %v", what, id, err)
			return
		}
		removed++
	}
	for _, lb := range lbs {
		if isOurs(lb, ourEPs) {
			remove("load balancer", lb.Id, lb.Delete)
		}
	}
	for _, ep := range ourEPs {
		remove("endpoint", ep.Id, ep.Delete)
	}
	for _, n := range ourNets {
		remove("network", n.Id, n.Delete)
	}
	return removed
}

func isOurs(lb hcn.HostComputeLoadBalancer, ourEPs map[string]hcn.HostComputeEndpoint) bool {
	for _, id := range lb.HostComputeEndpoints {
		if _, ok := ourEPs[string(hns.IDOf(id))]; ok {
			return true
		}
	}
	for _, s := range append([]string{lb.SourceVIP}, lb.FrontendVIPs...) {
		if a, err := netip.ParseAddr(s); err == nil && hnstest.InPlan(a) {
			return true
		}
	}
	return false
}
