// Package migratetest holds the kube-proxy setups the migration is tested on: the unit tests
// check each translation, the end-to-end tests that the API server accepts it and that the agent
// programs what upstream winkernel programs with the original flags.
package migratetest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/migrate"
)

// Case is one kube-proxy setup and what it becomes.
type Case struct {
	Name string
	// CommandLine is a kube-proxy command line, or a start script that runs one.
	CommandLine string
	// Config is a KubeProxyConfiguration file.
	Config string
	// Want is the translated spec; Warnings are substrings of the warnings, one each.
	Want     v1alpha1.WindowsProxyConfigSpec
	Warnings []string
	// KubeProxy is how kube-proxy ran on the node win-1.
	KubeProxy KubeProxy
}

// KubeProxy is what Windows kube-proxy programmed with: the settings that change HNS objects.
type KubeProxy struct {
	Network string
	Overlay bool
	DSR     bool
	// DualStack: the node proxies IPv6 too.
	DualStack bool
	// SourceVIP kube-proxy was given; empty when the node reserves it (Flannel's host-local
	// reservation, which winproxy's Create strategy replaces with an address of its own).
	SourceVIP string
	// SourceVIPEndpoint is the CNI's endpoint holding it (Calico_ep).
	SourceVIPEndpoint string
	// AnnotateSourceVIP: after the migration's warning, the admin annotates win-1 with its
	// source VIP.
	AnnotateSourceVIP bool
	// ForwardHealthCheckVIP is --forward-healthcheck-vip.
	ForwardHealthCheckVIP bool
}

// Translate runs the migration of the case.
func (c Case) Translate() (*migrate.Result, error) {
	in := migrate.NewInput()
	if c.Config != "" {
		if err := in.AddConfig([]byte(c.Config), "config.conf"); err != nil {
			return nil, err
		}
	}
	if c.CommandLine != "" {
		in.AddCommandLine(c.CommandLine, "command line")
	}
	return migrate.Translate(in, "from-kube-proxy")
}

func managed() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{migrate.ManagedLabel: "true"}}
}

func network(name string) v1alpha1.NetworkSpec {
	return v1alpha1.NetworkSpec{Name: name, Type: v1alpha1.NetworkTypeAuto}
}

func overlay(s v1alpha1.SourceVIPSpec) *v1alpha1.OverlaySpec {
	return &v1alpha1.OverlaySpec{SourceVIP: s}
}

func static(s v1alpha1.SourceVIPStatic) v1alpha1.SourceVIPSpec {
	return v1alpha1.SourceVIPSpec{Strategy: v1alpha1.SourceVIPStrategyStatic, Static: &s}
}

// SourceVIP is the address the overlay cases give win-1 (in its pod CIDR 10.244.1.0/24).
const SourceVIP = "10.244.1.2"

// Cases are the kube-proxy setups: overlay with each form of source VIP, L2Bridge with DSR,
// feature gates, dual-stack, settings without an equivalent, and a configuration file.
func Cases() []Case {
	return []Case{{
		Name:        "overlay, a literal source VIP of one node",
		CommandLine: `kube-proxy.exe --hostname-override=win-1 --network-name=vxlan0 --source-vip=10.244.1.2 --feature-gates=WinOverlay=true --proxy-mode=kernelspace --v=2`,
		Want: v1alpha1.WindowsProxyConfigSpec{NodeSelector: managed(), Network: network("vxlan0"), FeatureGates: map[string]bool{"WinOverlay": true},
			Overlay: overlay(static(v1alpha1.SourceVIPStatic{Addresses: []v1alpha1.NodeAddress{{NodeName: "win-1", Address: SourceVIP}}}))},
		Warnings:  []string{"--v=2"},
		KubeProxy: KubeProxy{Network: "vxlan0", Overlay: true, SourceVIP: SourceVIP},
	}, {
		Name:        "overlay, a literal source VIP in a DaemonSet's command line",
		CommandLine: `kube-proxy.exe --network-name vxlan0 --source-vip 10.244.1.2 --hostname-override=$(NODE_NAME)`,
		Want:        v1alpha1.WindowsProxyConfigSpec{NodeSelector: managed(), Network: network("vxlan0"), Overlay: overlay(static(v1alpha1.SourceVIPStatic{}))},
		Warnings:    []string{"is one node's address"},
		KubeProxy:   KubeProxy{Network: "vxlan0", Overlay: true, SourceVIP: SourceVIP, AnnotateSourceVIP: true},
	}, {
		Name: "overlay, the source VIP of Calico's endpoint, DSR (a Calico start script)",
		CommandLine: `$NetworkName = "Calico"
$sourceVip = (Get-HnsEndpoint | ? Name -EQ "Calico_ep").IpAddress
$env:KUBE_NETWORK = $NetworkName
& kube-proxy.exe --hostname-override=$env:NODENAME --v=2 --proxy-mode=kernelspace --enable-dsr=true --source-vip=$sourceVip ` + "`" + `
    --feature-gates=WinDSR=true,WinOverlay=true,IPv6DualStack=false`,
		Want: v1alpha1.WindowsProxyConfigSpec{NodeSelector: managed(), Network: network("Calico"), DSR: v1alpha1.DSRSpec{Enabled: true},
			FeatureGates: map[string]bool{"WinDSR": true, "WinOverlay": true},
			Overlay:      overlay(v1alpha1.SourceVIPSpec{Strategy: v1alpha1.SourceVIPStrategyEndpoint, Endpoint: &v1alpha1.SourceVIPEndpoint{Name: "Calico_ep"}})},
		Warnings:  []string{"--v=2", "IPv6DualStack=false no longer exists"},
		KubeProxy: KubeProxy{Network: "Calico", Overlay: true, DSR: true, SourceVIP: SourceVIP, SourceVIPEndpoint: "Calico_ep"},
	}, {
		Name: "overlay, a source VIP reserved by host-local IPAM (a Flannel start script)",
		CommandLine: `$env:KUBE_NETWORK = "vxlan0"
$vip = Reserve-SourceVip -Ipam host-local -Network $env:KUBE_NETWORK
& kube-proxy.exe --v=6 --hostname-override=$env:NODE_NAME --feature-gates=WinOverlay=true --proxy-mode=kernelspace --source-vip=$vip`,
		Want: v1alpha1.WindowsProxyConfigSpec{NodeSelector: managed(), Network: network("vxlan0"), FeatureGates: map[string]bool{"WinOverlay": true},
			Overlay: overlay(v1alpha1.SourceVIPSpec{Strategy: v1alpha1.SourceVIPStrategyCreate})},
		Warnings:  []string{"--v=6", "host-local IPAM"},
		KubeProxy: KubeProxy{Network: "vxlan0", Overlay: true},
	}, {
		Name:        "overlay, a source VIP computed on the node",
		CommandLine: `kube-proxy.exe --network-name=vxlan0 --source-vip=$(SOURCE_VIP)`,
		Want:        v1alpha1.WindowsProxyConfigSpec{NodeSelector: managed(), Network: network("vxlan0"), Overlay: overlay(static(v1alpha1.SourceVIPStatic{}))},
		Warnings:    []string{"is computed on the node: annotate each node"},
		KubeProxy:   KubeProxy{Network: "vxlan0", Overlay: true, SourceVIP: SourceVIP, AnnotateSourceVIP: true},
	}, {
		Name:        "L2Bridge with DSR",
		CommandLine: `kube-proxy.exe --network-name=cbr0 --enable-dsr --feature-gates=WinDSR=true --proxy-mode=kernelspace`,
		Want: v1alpha1.WindowsProxyConfigSpec{NodeSelector: managed(), Network: network("cbr0"), DSR: v1alpha1.DSRSpec{Enabled: true},
			FeatureGates: map[string]bool{"WinDSR": true}},
		KubeProxy: KubeProxy{Network: "cbr0", DSR: true},
	}, {
		Name:        "feature gates: current ones kept, gone ones dropped, locked ones reported",
		CommandLine: `kube-proxy.exe --network-name=cbr0 --feature-gates=WinDSR=true,IPv6DualStack=true,EndpointSliceProxying=true,WinOverlay=false`,
		Want: v1alpha1.WindowsProxyConfigSpec{NodeSelector: managed(), Network: network("cbr0"),
			FeatureGates: map[string]bool{"WinDSR": true, "WinOverlay": false}},
		Warnings:  []string{"IPv6DualStack=true no longer exists", "EndpointSliceProxying=true no longer exists", "WinOverlay=false: the gate is locked to true"},
		KubeProxy: KubeProxy{Network: "cbr0"},
	}, {
		Name:        "dual-stack",
		CommandLine: `kube-proxy.exe --network-name=cbr0 --cluster-cidr=10.244.0.0/16,fd00:10:244::/56 --proxy-mode=kernelspace`,
		Want: v1alpha1.WindowsProxyConfigSpec{NodeSelector: managed(), Network: network("cbr0"),
			DualStack: v1alpha1.DualStackSpec{Enabled: true}},
		KubeProxy: KubeProxy{Network: "cbr0", DualStack: true},
	}, {
		Name: "settings without an equivalent, or with another meaning",
		CommandLine: `kube-proxy.exe --network-name=cbr0 --proxy-mode=userspace --masquerade-all --nodeport-addresses=10.0.0.0/8 --bind-address=10.0.0.11 ` +
			`--windows-service --udp-timeout=250ms --metrics-bind-address=0.0.0.0:10249 --healthz-bind-address=10.0.0.11:10300 ` +
			`--iptables-sync-period=45s --iptables-min-sync-period=1500ms --kube-api-qps=20 --cluster-cidr=10.244.0.0/16`,
		Want: v1alpha1.WindowsProxyConfigSpec{NodeSelector: managed(), Network: network("cbr0"),
			HealthCheck: v1alpha1.HealthCheckSpec{Port: 10300}, Sync: v1alpha1.SyncSpec{PeriodSeconds: 45, MinPeriodSeconds: 2}},
		Warnings: []string{
			"--udp-timeout (command line) is not a flag of kube-proxy 1.37",
			"--proxy-mode=userspace", "--masquerade-all=true (command line) has no equivalent",
			"--nodeport-addresses=10.0.0.0/8 (command line) has no equivalent", "--bind-address=10.0.0.11 (command line) has no equivalent",
			"--windows-service=true (command line) has no equivalent", "--metrics-bind-address=0.0.0.0:10249", "its IP 10.0.0.11 is the agent's --healthz-bind-address",
			"--iptables-min-sync-period=1500ms becomes 2s", "--kube-api-qps=20",
		},
		KubeProxy: KubeProxy{Network: "cbr0"},
	}, {
		Name: "a KubeProxyConfiguration file",
		Config: `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: kernelspace
hostnameOverride: WIN-1
clusterCIDR: 10.244.0.0/16
featureGates:
  WinDSR: true
  WinOverlay: true
winkernel:
  networkName: vxlan0
  sourceVip: 10.244.1.2
  enableDSR: true
  rootHnsEndpointName: cbr0
  forwardHealthCheckVip: true
udpIdleTimeout: 250ms
`,
		Want: v1alpha1.WindowsProxyConfigSpec{NodeSelector: managed(), Network: network("vxlan0"), DSR: v1alpha1.DSRSpec{Enabled: true},
			FeatureGates: map[string]bool{"WinDSR": true, "WinOverlay": true}, HealthCheck: v1alpha1.HealthCheckSpec{ForwardVIP: true},
			Overlay: overlay(static(v1alpha1.SourceVIPStatic{Addresses: []v1alpha1.NodeAddress{{NodeName: "win-1", Address: SourceVIP}}}))},
		Warnings:  []string{`unknown field "udpIdleTimeout"`},
		KubeProxy: KubeProxy{Network: "vxlan0", Overlay: true, DSR: true, SourceVIP: SourceVIP, ForwardHealthCheckVIP: true},
	}}
}
