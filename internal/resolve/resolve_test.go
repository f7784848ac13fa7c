package resolve

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/testbuild"
)

// node is the node the cases resolve for: a Windows node of kubelet version kubelet with a pod
// CIDR and InternalIPs of both families, changed by opts.
func node(name, kubelet string, opts ...testbuild.NodeOption) *corev1.Node {
	base := []testbuild.NodeOption{
		testbuild.Kubelet(kubelet),
		testbuild.PodCIDRs("10.244.1.0/24", "fd00:10:244:1::/64"),
		testbuild.Addresses(corev1.NodeHostName, name),
		testbuild.InternalIPs("192.168.0.10", "192.168.0.11", "fd00::10"),
	}
	return testbuild.Node(name, append(base, opts...)...)
}

// spec is a spec with the health check and sync defaults the CRD sets, changed by opts.
func spec(opts ...testbuild.ConfigOption) *winproxyv1alpha1.WindowsProxyConfigSpec {
	return testbuild.Spec(append([]testbuild.ConfigOption{testbuild.Defaulted()}, opts...)...)
}

var (
	createVIP = winproxyv1alpha1.SourceVIPSpec{Strategy: winproxyv1alpha1.SourceVIPStrategyCreate, Create: &winproxyv1alpha1.SourceVIPCreate{OffsetFromEnd: 1}}
	staticVIP = winproxyv1alpha1.SourceVIPSpec{Strategy: winproxyv1alpha1.SourceVIPStrategyStatic, Static: &winproxyv1alpha1.SourceVIPStatic{
		NodeAnnotation: winproxyv1alpha1.SourceVIPAnnotation,
		Addresses:      []winproxyv1alpha1.NodeAddress{{NodeName: "listed", Address: "10.244.1.3"}},
	}}
)

// annotated gives the node a source VIP in the annotation static source VIPs read by default.
func annotated(vip string) testbuild.NodeOption {
	return testbuild.Annotations(map[string]string{winproxyv1alpha1.SourceVIPAnnotation: vip})
}

// want builds the expected result on the default node; gates are the effective values.
func want(minor string, g map[string]bool, mutate ...func(*winproxyv1alpha1.ResolvedProxyConfig)) *winproxyv1alpha1.ResolvedProxyConfig {
	r := &winproxyv1alpha1.ResolvedProxyConfig{
		Network:           winproxyv1alpha1.NetworkSpec{Name: "cbr0", Type: winproxyv1alpha1.NetworkTypeL2Bridge},
		FeatureGates:      g,
		HealthCheck:       winproxyv1alpha1.HealthCheckSpec{RootEndpointName: "cbr0", Port: 10256},
		Sync:              winproxyv1alpha1.SyncSpec{PeriodSeconds: 30, MinPeriodSeconds: 1},
		NodeIPs:           []string{"192.168.0.10", "fd00::10"},
		PodCIDRs:          []string{"10.244.1.0/24", "fd00:10:244:1::/64"},
		KubernetesVersion: minor,
		// Unset in the spec is on.
		TopologyAwareRouting: true,
	}
	for _, m := range mutate {
		m(r)
	}
	return r
}

// gatesAt are the effective gates the agent reads at a minor version, with WinDSR and WinOverlay
// as given; PreferSameTrafficDistribution exists from 1.33, alpha (off) there and on from 1.34.
func gatesAt(minor string, dsr, overlay bool) map[string]bool {
	g := map[string]bool{"WinDSR": dsr, "WinOverlay": overlay, "AllowServiceExternalIPs": true}
	if m, _ := strconv.Atoi(strings.TrimPrefix(minor, "1.")); m >= 33 {
		g["PreferSameTrafficDistribution"] = m >= 34
	}
	return g
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name string
		spec *winproxyv1alpha1.WindowsProxyConfigSpec
		node *corev1.Node
		want *winproxyv1alpha1.ResolvedProxyConfig
		// holder says what holds an address; nil checks the address alone.
		holder     AddressHolder
		wantReason string
		wantMsg    string
	}{
		// Defaults by version: the effective gates are rendered for the agent.
		{name: "1.14 defaults", spec: spec(), node: node("n", "v1.14.10"), want: want("1.14", gatesAt("1.14", false, false))},
		{name: "1.20 defaults", spec: spec(), node: node("n", "v1.20.0"), want: want("1.20", gatesAt("1.20", false, true))},
		{name: "1.32 defaults", spec: spec(), node: node("n", "v1.32.4"), want: want("1.32", gatesAt("1.32", false, true))},
		{name: "1.33 defaults", spec: spec(), node: node("n", "v1.33.2"), want: want("1.33", gatesAt("1.33", true, true))},
		{name: "1.34 defaults, vendor suffix", spec: spec(), node: node("n", "v1.34.0-eks-113cf36"), want: want("1.34", gatesAt("1.34", true, true))},
		{name: "1.37 defaults", spec: spec(), node: node("n", "v1.37.2"), want: want("1.37", gatesAt("1.37", true, true))},

		// DSR needs WinDSR in effect.
		{name: "1.14 DSR without gate", spec: spec(testbuild.DSR()), node: node("n", "v1.14.0"), wantReason: winproxyv1alpha1.ReasonFeatureGateDisabled,
			wantMsg: "WinDSR feature gate not enabled (dsr.enabled needs spec.featureGates.WinDSR: true on Kubernetes 1.14 nodes)"},
		{name: "1.14 DSR with gate", spec: spec(testbuild.DSR(), testbuild.FeatureGates(map[string]bool{"WinDSR": true})), node: node("n", "v1.14.0"),
			want: want("1.14", gatesAt("1.14", true, false), func(r *winproxyv1alpha1.ResolvedProxyConfig) { r.EnableDSR = true })},
		{name: "1.13 DSR has no gate", spec: spec(testbuild.DSR()), node: node("n", "v1.13.5"), wantReason: winproxyv1alpha1.ReasonFeatureGateDisabled,
			wantMsg: "WinDSR feature gate not enabled (Kubernetes 1.13 has no WinDSR gate; upgrade the node)"},
		{name: "1.32 DSR without gate", spec: spec(testbuild.DSR()), node: node("n", "v1.32.1"), wantReason: winproxyv1alpha1.ReasonFeatureGateDisabled,
			wantMsg: "WinDSR feature gate not enabled (dsr.enabled needs spec.featureGates.WinDSR: true on Kubernetes 1.32 nodes)"},
		{name: "1.32 DSR with gate", spec: spec(testbuild.DSR(), testbuild.FeatureGates(map[string]bool{"WinDSR": true})), node: node("n", "v1.32.1"),
			want: want("1.32", gatesAt("1.32", true, true), func(r *winproxyv1alpha1.ResolvedProxyConfig) { r.EnableDSR = true })},
		{name: "1.33 DSR by default", spec: spec(testbuild.DSR()), node: node("n", "v1.33.0"),
			want: want("1.33", gatesAt("1.33", true, true), func(r *winproxyv1alpha1.ResolvedProxyConfig) { r.EnableDSR = true })},
		{name: "1.34 DSR with explicit GA gate", spec: spec(testbuild.DSR(), testbuild.FeatureGates(map[string]bool{"WinDSR": true})), node: node("n", "v1.34.1"),
			want: want("1.34", gatesAt("1.34", true, true), func(r *winproxyv1alpha1.ResolvedProxyConfig) { r.EnableDSR = true })},

		// Topology-aware routing: on unless turned off.
		{name: "topologyAwareRouting false", spec: spec(func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.TopologyAwareRouting = new(false) }),
			node: node("n", "v1.37.2"),
			want: want("1.37", gatesAt("1.37", true, true), func(r *winproxyv1alpha1.ResolvedProxyConfig) { r.TopologyAwareRouting = false })},
		{name: "topologyAwareRouting true", spec: spec(func(c *winproxyv1alpha1.WindowsProxyConfig) { c.Spec.TopologyAwareRouting = new(true) }),
			node: node("n", "v1.32.4"), want: want("1.32", gatesAt("1.32", false, true))},
		{name: "PreferSameTrafficDistribution on at 1.33", spec: spec(testbuild.FeatureGates(map[string]bool{"PreferSameTrafficDistribution": true})), node: node("n", "v1.33.2"),
			want: want("1.33", func() map[string]bool {
				g := gatesAt("1.33", true, true)
				g["PreferSameTrafficDistribution"] = true
				return g
			}())},

		// Locked and unknown gates.
		{name: "1.33 WinDSR=false accepted", spec: spec(testbuild.FeatureGates(map[string]bool{"WinDSR": false})), node: node("n", "v1.33.0"), want: want("1.33", gatesAt("1.33", false, true))},
		{name: "1.34 WinDSR=false locked", spec: spec(testbuild.FeatureGates(map[string]bool{"WinDSR": false})), node: node("n", "v1.34.0"), wantReason: winproxyv1alpha1.ReasonFeatureGateLocked,
			wantMsg: "cannot set feature gate WinDSR to false, feature is locked to true (node runs Kubernetes 1.34; remove the gate from spec.featureGates)"},
		{name: "1.37 WinOverlay=false locked", spec: spec(testbuild.FeatureGates(map[string]bool{"WinOverlay": false})), node: node("n", "v1.37.2"), wantReason: winproxyv1alpha1.ReasonFeatureGateLocked,
			wantMsg: "cannot set feature gate WinOverlay to false, feature is locked to true (node runs Kubernetes 1.37; remove the gate from spec.featureGates)"},
		{name: "IPv6DualStack unknown", spec: spec(testbuild.FeatureGates(map[string]bool{"IPv6DualStack": true})), node: node("n", "v1.32.0"), wantReason: winproxyv1alpha1.ReasonUnknownFeatureGate,
			wantMsg: "unrecognized feature gate: IPv6DualStack (node runs Kubernetes 1.32; remove the gate from spec.featureGates)"},

		// Overlay needs WinOverlay in effect.
		{name: "1.14 overlay without gate", spec: spec(testbuild.Overlay(createVIP)), node: node("n", "v1.14.0"), wantReason: winproxyv1alpha1.ReasonFeatureGateDisabled,
			wantMsg: "WinOverlay feature gate not enabled (network.type Overlay needs spec.featureGates.WinOverlay: true on Kubernetes 1.14 nodes)"},
		{name: "1.20 overlay create", spec: spec(testbuild.Overlay(createVIP)), node: node("n", "v1.20.3"), want: want("1.20", gatesAt("1.20", false, true), func(r *winproxyv1alpha1.ResolvedProxyConfig) {
			r.Network.Type = winproxyv1alpha1.NetworkTypeOverlay
			r.SourceVIP = &winproxyv1alpha1.ResolvedSourceVIP{Strategy: winproxyv1alpha1.SourceVIPStrategyCreate, Address: "10.244.1.254"}
		})},

		// Source VIP inputs.
		{name: "create offset 10", spec: spec(testbuild.Overlay(winproxyv1alpha1.SourceVIPSpec{Strategy: winproxyv1alpha1.SourceVIPStrategyCreate, Create: &winproxyv1alpha1.SourceVIPCreate{OffsetFromEnd: 10}})),
			node: node("n", "v1.37.0", testbuild.PodCIDRs("10.244.0.0/16")),
			want: want("1.37", gatesAt("1.37", true, true), func(r *winproxyv1alpha1.ResolvedProxyConfig) {
				r.Network.Type = winproxyv1alpha1.NetworkTypeOverlay
				r.PodCIDRs = []string{"10.244.0.0/16"}
				r.SourceVIP = &winproxyv1alpha1.ResolvedSourceVIP{Strategy: winproxyv1alpha1.SourceVIPStrategyCreate, Address: "10.244.255.245"}
			})},
		{name: "create offset too large", spec: spec(testbuild.Overlay(winproxyv1alpha1.SourceVIPSpec{Strategy: winproxyv1alpha1.SourceVIPStrategyCreate, Create: &winproxyv1alpha1.SourceVIPCreate{OffsetFromEnd: 255}})),
			node: node("n", "v1.37.0"), wantReason: winproxyv1alpha1.ReasonSourceVIPUnavailable,
			wantMsg: "overlay.sourceVIP.create.offsetFromEnd 255 does not fit in the node's pod CIDR 10.244.1.0/24"},
		{name: "create without pod CIDR", spec: spec(testbuild.Overlay(createVIP)), node: node("n", "v1.37.0", testbuild.PodCIDRs()),
			wantReason: winproxyv1alpha1.ReasonSourceVIPUnavailable,
			wantMsg:    "source-vip flag not set: node has no IPv4 pod CIDR to reserve the source VIP from (spec.podCIDRs is empty)"},
		{name: "create without pod CIDR on Auto is left to the agent", spec: spec(testbuild.Overlay(createVIP), testbuild.NetworkType(winproxyv1alpha1.NetworkTypeAuto)), node: node("n", "v1.37.0", testbuild.PodCIDRs()),
			want: want("1.37", gatesAt("1.37", true, true), func(r *winproxyv1alpha1.ResolvedProxyConfig) {
				r.Network.Type = winproxyv1alpha1.NetworkTypeAuto
				r.PodCIDRs = nil
				r.SourceVIP = &winproxyv1alpha1.ResolvedSourceVIP{Strategy: winproxyv1alpha1.SourceVIPStrategyCreate}
			})},
		{name: "static from annotation", spec: spec(testbuild.Overlay(staticVIP)), node: node("n", "v1.37.0", annotated("10.244.1.2")),
			want: want("1.37", gatesAt("1.37", true, true), func(r *winproxyv1alpha1.ResolvedProxyConfig) {
				r.Network.Type = winproxyv1alpha1.NetworkTypeOverlay
				r.SourceVIP = &winproxyv1alpha1.ResolvedSourceVIP{Strategy: winproxyv1alpha1.SourceVIPStrategyStatic, Address: "10.244.1.2"}
			})},
		{name: "static list wins over annotation", spec: spec(testbuild.Overlay(staticVIP)), node: node("listed", "v1.37.0", annotated("10.244.1.2")),
			want: want("1.37", gatesAt("1.37", true, true), func(r *winproxyv1alpha1.ResolvedProxyConfig) {
				r.Network.Type = winproxyv1alpha1.NetworkTypeOverlay
				r.SourceVIP = &winproxyv1alpha1.ResolvedSourceVIP{Strategy: winproxyv1alpha1.SourceVIPStrategyStatic, Address: "10.244.1.3"}
			})},
		{name: "static missing", spec: spec(testbuild.Overlay(staticVIP)), node: node("n", "v1.37.0"), wantReason: winproxyv1alpha1.ReasonSourceVIPUnavailable,
			wantMsg: "source-vip flag not set: node has no source VIP in node annotation winproxy.io/source-vip; set it there or list the node in spec.overlay.sourceVIP.static.addresses"},
		{name: "static invalid", spec: spec(testbuild.Overlay(staticVIP), testbuild.NetworkType(winproxyv1alpha1.NetworkTypeAuto)), node: node("n", "v1.37.0", annotated("fd00::1")), wantReason: winproxyv1alpha1.ReasonSourceVIPUnavailable,
			wantMsg: `source VIP "fd00::1" from node annotation winproxy.io/source-vip is not an IPv4 address: overlay networks are IPv4 only`},
		{name: "endpoint", spec: spec(testbuild.Overlay(winproxyv1alpha1.SourceVIPSpec{Strategy: winproxyv1alpha1.SourceVIPStrategyEndpoint, Endpoint: &winproxyv1alpha1.SourceVIPEndpoint{Name: "Calico_ep"}})),
			node: node("n", "v1.33.0"), want: want("1.33", gatesAt("1.33", true, true), func(r *winproxyv1alpha1.ResolvedProxyConfig) {
				r.Network.Type = winproxyv1alpha1.NetworkTypeOverlay
				r.SourceVIP = &winproxyv1alpha1.ResolvedSourceVIP{Strategy: winproxyv1alpha1.SourceVIPStrategyEndpoint, EndpointName: "Calico_ep"}
			})},

		// Unusable source VIPs, from a node or its pod CIDR.
		{name: "static annotation 0.0.0.0", spec: spec(testbuild.Overlay(staticVIP)), node: node("n", "v1.37.0", annotated("0.0.0.0")), wantReason: winproxyv1alpha1.ReasonSourceVIPUnusable,
			wantMsg: "source VIP 0.0.0.0 is the unspecified address, not a unicast address; give the node an unused unicast address of its pod CIDR that the CNI's IPAM never hands out"},
		{name: "static annotation broadcast", spec: spec(testbuild.Overlay(staticVIP)), node: node("n", "v1.37.0", annotated("255.255.255.255")), wantReason: winproxyv1alpha1.ReasonSourceVIPUnusable,
			wantMsg: "source VIP 255.255.255.255 is the broadcast address, not a unicast address; give the node an unused unicast address of its pod CIDR that the CNI's IPAM never hands out"},
		{name: "static annotation loopback", spec: spec(testbuild.Overlay(staticVIP)), node: node("n", "v1.37.0", annotated("127.0.0.1")), wantReason: winproxyv1alpha1.ReasonSourceVIPUnusable,
			wantMsg: "source VIP 127.0.0.1 is a loopback address, not a unicast address; give the node an unused unicast address of its pod CIDR that the CNI's IPAM never hands out"},
		{name: "static annotation multicast", spec: spec(testbuild.Overlay(staticVIP)), node: node("n", "v1.37.0", annotated("224.0.0.251")), wantReason: winproxyv1alpha1.ReasonSourceVIPUnusable,
			wantMsg: "source VIP 224.0.0.251 is a multicast address, not a unicast address; give the node an unused unicast address of its pod CIDR that the CNI's IPAM never hands out"},
		{name: "static annotation link-local", spec: spec(testbuild.Overlay(staticVIP)), node: node("n", "v1.37.0", annotated("169.254.3.4")), wantReason: winproxyv1alpha1.ReasonSourceVIPUnusable,
			wantMsg: "source VIP 169.254.3.4 is a link-local address, not a unicast address; give the node an unused unicast address of its pod CIDR that the CNI's IPAM never hands out"},
		{name: "create in a loopback pod CIDR", spec: spec(testbuild.Overlay(createVIP)), node: node("n", "v1.37.0", testbuild.PodCIDRs("127.0.0.0/24")),
			wantReason: winproxyv1alpha1.ReasonSourceVIPUnusable,
			wantMsg:    "source VIP 127.0.0.254 is a loopback address, not a unicast address; give the node an unused unicast address of its pod CIDR that the CNI's IPAM never hands out"},
		{name: "static annotation a pod holds", spec: spec(testbuild.Overlay(staticVIP)), node: node("n", "v1.37.0", annotated("10.244.1.7")),
			holder:     func(ip netip.Addr) string { return map[string]string{"10.244.1.7": "Pod shop/cart-1"}[ip.String()] },
			wantReason: winproxyv1alpha1.ReasonSourceVIPUnusable,
			wantMsg:    "source VIP 10.244.1.7 is already held by Pod shop/cart-1; give the node an unused unicast address of its pod CIDR that the CNI's IPAM never hands out"},
		{name: "created address a Service holds", spec: spec(testbuild.Overlay(createVIP)), node: node("n", "v1.37.0"),
			holder: func(ip netip.Addr) string {
				return map[string]string{"10.244.1.254": "Service default/web"}[ip.String()]
			},
			wantReason: winproxyv1alpha1.ReasonSourceVIPUnusable,
			wantMsg:    "source VIP 10.244.1.254 is already held by Service default/web; give the node an unused unicast address of its pod CIDR that the CNI's IPAM never hands out"},
		{name: "static annotation nobody holds", spec: spec(testbuild.Overlay(staticVIP)), node: node("n", "v1.37.0", annotated("10.244.1.2")),
			holder: func(netip.Addr) string { return "" },
			want: want("1.37", gatesAt("1.37", true, true), func(r *winproxyv1alpha1.ResolvedProxyConfig) {
				r.Network.Type = winproxyv1alpha1.NetworkTypeOverlay
				r.SourceVIP = &winproxyv1alpha1.ResolvedSourceVIP{Strategy: winproxyv1alpha1.SourceVIPStrategyStatic, Address: "10.244.1.2"}
			})},
		{name: "static annotation of 40 KB is quoted in part", spec: spec(testbuild.Overlay(staticVIP)), node: node("n", "v1.37.0", annotated(strings.Repeat("é", 20480))),
			wantReason: winproxyv1alpha1.ReasonSourceVIPUnavailable,
			wantMsg:    `source VIP "` + strings.Repeat("é", 32) + `"... (40960 bytes) from node annotation winproxy.io/source-vip is not an IPv4 address: overlay networks are IPv4 only`},

		// Bad versions.
		{name: "empty kubelet version", spec: spec(), node: node("n", ""), wantReason: winproxyv1alpha1.ReasonInvalidNodeVersion,
			wantMsg: `cannot read the node's Kubernetes version from kubelet version "": could not parse "" as version`},
		{name: "major 2", spec: spec(), node: node("n", "v2.0.0"), wantReason: winproxyv1alpha1.ReasonInvalidNodeVersion,
			wantMsg: `cannot read the node's Kubernetes version from kubelet version "v2.0.0": unsupported major version 2`},
		{name: "kubelet version of 10 KB", spec: spec(), node: node("n", "v"+strings.Repeat("1", 10239)), wantReason: winproxyv1alpha1.ReasonInvalidNodeVersion,
			wantMsg: `cannot read the node's Kubernetes version from kubelet version "v` + strings.Repeat("1", 63) + `"... (10240 bytes): illegal version string "v` + strings.Repeat("1", 100) + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []Option
			if tt.holder != nil {
				opts = append(opts, WithAddressHolder(tt.holder))
			}
			got, err := Resolve(tt.spec, tt.node, opts...)
			if tt.wantReason != "" {
				if err == nil {
					t.Fatalf("Resolve() succeeded, want an error with reason %s", tt.wantReason)
				}
				if diff := cmp.Diff(Error{Reason: tt.wantReason, Message: tt.wantMsg}, *err); diff != "" {
					t.Errorf("Resolve() error (-want,+got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve() error = %v", err)
			}
			if diff := cmp.Diff(*tt.want, got); diff != "" {
				t.Errorf("Resolve() (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestHashIsStableAndContentBased(t *testing.T) {
	a := want("1.37", gatesAt("1.37", true, true))
	b := want("1.37", map[string]bool{"PreferSameTrafficDistribution": true, "AllowServiceExternalIPs": true, "WinOverlay": true, "WinDSR": true})
	if Hash(a) != Hash(b) {
		t.Errorf("equal configs hash differently: %s != %s", Hash(a), Hash(b))
	}
	if len(Hash(a)) != 16 {
		t.Errorf("hash %q is not 16 hex digits", Hash(a))
	}
	b.EnableDSR = true
	if Hash(a) == Hash(b) {
		t.Error("different configs hash the same")
	}
}
