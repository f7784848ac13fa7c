package engine

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/testbuild"
)

// The node's conditions: what blocks programming, DSR, dual-stack and the
// source VIP (docs/design/dataplane.md#the-node).

// A node that cannot be programmed as asked leaves HNS as it is and says why.
func TestProgrammingIsBlocked(t *testing.T) {
	overlayNodePort := []*corev1.Service{service("svc1", testbuild.NodePort(3001))}
	overlayRemote := []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, testbuild.Endpoint("192.168.2.3", "node-2"))}
	noSVIP := config(false)
	noSVIP.SourceVIP = nil
	noMAC := view(true, ws2022, sourceVIPEP())
	noMAC.HostMAC = ""
	v6SVIP := config(false)
	v6SVIP.SourceVIP.Address = "fd00::2"
	run(t, []scenario{
		{
			name: "scenario-05-overlay-without-source-vip", cfg: noSVIP, view: view(true, ws2022),
			svcs: overlayNodePort, slices: overlayRemote, check: blocked(v1alpha1.ReasonSourceVIPUnavailable),
		},
		{
			name: "scenario-06-overlay-without-host-mac", cfg: config(false), view: noMAC,
			svcs: overlayNodePort, slices: overlayRemote, problems: []string{v1alpha1.ReasonHostMACUnknown},
			check: blocked(v1alpha1.ReasonHostMACUnknown),
		},
		{
			name: "scenario-08-network-absent", cfg: config(false), view: HNSView{Capabilities: ws2022},
			svcs: overlayNodePort, slices: overlayRemote,
			check: func(t *testing.T, d *Desired) {
				blocked(v1alpha1.ReasonNetworkNotFound)(t, d)
				if d.Effective.NetworkReady.True {
					t.Error("NetworkReady is true")
				}
			},
		},
		{
			name: "scenario-14-source-vip-of-the-wrong-family", cfg: v6SVIP, view: view(true, ws2022),
			svcs: overlayNodePort, slices: overlayRemote, check: blocked(v1alpha1.ReasonSourceVIPUnavailable),
		},
	})
}

// DSR the host cannot do is reported and left out, instead of failing the node.
func TestDSRRequestedOnHNSWithoutDSR(t *testing.T) {
	run(t, []scenario{
		{
			name: "scenario-02-dsr-requested-hns-without-dsr", cfg: config(true), view: view(false, noDSR),
			svcs:   []*corev1.Service{service("svc1", testbuild.NodePort(3001))},
			slices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, testbuild.Endpoint("192.168.2.3", "node-2"))},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"},
			check: func(t *testing.T, d *Desired) {
				if d.Effective.DSR.Active || !d.Effective.DSR.Requested || d.Effective.DSRActive.Reason != v1alpha1.ReasonDSRUnsupported {
					t.Errorf("DSR = %+v %+v, want requested, inactive, DSRUnsupported", d.Effective.DSR, d.Effective.DSRActive)
				}
			},
		},
	})
}

// Dual-stack needs L2Bridge and HNS 11.10; otherwise one family is proxied.
func TestDualStackDowngrade(t *testing.T) {
	cfg := config(false)
	cfg.DualStack = true
	for _, tc := range []struct {
		name     string
		overlay  bool
		caps     hns.Capabilities
		families []v1alpha1.IPFamily
		reason   string
		down     bool
	}{
		{"scenario-12-l2bridge-hns-11.10", false, ws2022, []v1alpha1.IPFamily{v1alpha1.IPv4, v1alpha1.IPv6}, v1alpha1.ReasonDualStackActive, false},
		{"scenario-12-overlay-downgrades", true, ws2022, []v1alpha1.IPFamily{v1alpha1.IPv4}, v1alpha1.ReasonOverlayNetwork, true},
		{"scenario-12-old-hns-downgrades", false, ws2019, []v1alpha1.IPFamily{v1alpha1.IPv4}, v1alpha1.ReasonHNSUnsupported, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Compute(Input{NodeName: nodeName, Config: cfg, HNS: view(tc.overlay, tc.caps, sourceVIPEP())})
			e := d.Effective
			if diff := cmp.Diff(tc.families, e.IPFamilies); diff != "" {
				t.Errorf("families (-want +got):\n%s", diff)
			}
			if e.DualStackDowngraded.True != tc.down || e.DualStackDowngraded.Reason != tc.reason {
				t.Errorf("downgraded = %+v, want %v %s", e.DualStackDowngraded, tc.down, tc.reason)
			}
		})
	}
}

// Where the overlay source VIP comes from, and the endpoint that holds it.
func TestSourceVIPStrategies(t *testing.T) {
	strategy := func(s v1alpha1.SourceVIPStrategy, name, addr string) v1alpha1.ResolvedProxyConfig {
		c := config(false)
		c.SourceVIP = &v1alpha1.ResolvedSourceVIP{Strategy: s, EndpointName: name, Address: addr}
		return c
	}
	calico := localEP("EP-CAL", "192.168.1.9")
	calico.Name = "Calico_ep"
	pod := localEP("EP-POD", sourceVIP)
	pod.MAC = "00-15-5D-01-02-03"
	// kube-proxy's source-VIP endpoint: no name, the host's MAC (written as Windows does).
	kubeProxySVIP := hns.Endpoint{ID: "EP-KP", IPs: []netip.Addr{ip(sourceVIP)}, MAC: strings.ToLower(hostMAC)}
	typed := config(false)
	typed.Network.Type = v1alpha1.NetworkTypeOverlay
	for _, tc := range []struct {
		name   string
		cfg    v1alpha1.ResolvedProxyConfig
		view   HNSView
		reason string // blocking reason, "" when programmable
		svip   string
		origin v1alpha1.SourceVIPOrigin
		create bool
	}{
		{"endpoint-strategy-reads-the-named-endpoint", strategy(v1alpha1.SourceVIPStrategyEndpoint, "Calico_ep", ""), view(true, ws2022, calico), "", "192.168.1.9", v1alpha1.SourceVIPOriginEndpoint, false},
		{"endpoint-strategy-missing-endpoint", strategy(v1alpha1.SourceVIPStrategyEndpoint, "Calico_ep", ""), view(true, ws2022), v1alpha1.ReasonSourceVIPEndpointMissing, "", v1alpha1.SourceVIPOriginEndpoint, false},
		{"create-strategy-creates", strategy(v1alpha1.SourceVIPStrategyCreate, "", sourceVIP), view(true, ws2022), "", sourceVIP, v1alpha1.SourceVIPOriginCreate, true},
		{"create-strategy-readopts-its-endpoint", strategy(v1alpha1.SourceVIPStrategyCreate, "", sourceVIP), view(true, ws2022, sourceVIPEP()), "", sourceVIP, v1alpha1.SourceVIPOriginCreate, false},
		{"create-strategy-refuses-a-pod-address", strategy(v1alpha1.SourceVIPStrategyCreate, "", sourceVIP), view(true, ws2022, pod), v1alpha1.ReasonSourceVIPConflict, sourceVIP, v1alpha1.SourceVIPOriginCreate, false},
		// A pod's endpoint holds the given address, whether or not the API has its Pod yet.
		{"static-strategy-refuses-a-pod-address", config(false), view(true, ws2022, pod), v1alpha1.ReasonSourceVIPConflict, sourceVIP, v1alpha1.SourceVIPOriginStatic, false},
		{"static-strategy-refuses-a-pod-beside-its-endpoint", config(false), view(true, ws2022, sourceVIPEP(), pod), v1alpha1.ReasonSourceVIPConflict, sourceVIP, v1alpha1.SourceVIPOriginStatic, false},
		{"static-strategy-readopts-its-endpoint", config(false), view(true, ws2022, sourceVIPEP()), "", sourceVIP, v1alpha1.SourceVIPOriginStatic, false},
		{"static-strategy-uses-kube-proxys-endpoint", config(false), view(true, ws2022, kubeProxySVIP), "", sourceVIP, v1alpha1.SourceVIPOriginStatic, false},
		{"static-strategy-creates", config(false), view(true, ws2022), "", sourceVIP, v1alpha1.SourceVIPOriginStatic, true},
		{"network-type-mismatch", typed, view(false, ws2022), v1alpha1.ReasonNetworkTypeMismatch, "", v1alpha1.SourceVIPOriginNone, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Compute(Input{NodeName: nodeName, Config: tc.cfg, HNS: tc.view})
			e := d.Effective
			if got := e.Blocked.Reason; got != tc.reason || e.Programmable != (tc.reason == "") {
				t.Errorf("blocked %q (programmable %v), want %q", got, e.Programmable, tc.reason)
			}
			if tc.reason == "" && (e.SourceVIP.Address != tc.svip || e.SourceVIP.Origin != tc.origin) {
				t.Errorf("source VIP %+v, want %s from %s", e.SourceVIP, tc.svip, tc.origin)
			}
			if (d.SourceVIPEndpoint != nil) != tc.create {
				t.Errorf("source-VIP endpoint to create = %+v, want %v", d.SourceVIPEndpoint, tc.create)
			}
		})
	}
}
