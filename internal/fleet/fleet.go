// Package fleet is the simulated mixed Linux/Windows cluster that `make demo` and the end-to-end
// tests run winproxy against: Nodes of several Kubernetes and Windows Server versions, sample
// Services with EndpointSlices spread over the nodes, and, for each Windows node, a simulated HNS
// host whose overlay network is filled in from the cluster the way a CNI would.
package fleet

import (
	"context"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// Node is one node of the fleet.
type Node struct {
	Name string
	// Windows is false for the Linux node.
	Windows bool
	// KubeletVersion is what the node reports, e.g. "v1.33.2".
	KubeletVersion string
	// Profile is the simulated HNS profile (ws2019, ws2022, ws2025) of a Windows node.
	Profile string
	// Build is the Windows build, for the well-known windows-build label.
	Build string
	IP    string
	// PodCIDR is the node's pod subnet; its .2 address is the Calico_ep source VIP.
	PodCIDR string
}

// Nodes is the default fleet: three Windows nodes, one per supported Windows Server release and
// Kubernetes minor, and one Linux node.
var Nodes = []Node{
	{Name: "win-2019", Windows: true, KubeletVersion: "v1.32.4", Profile: sim.WS2019.Name, Build: windowsBuild(sim.WS2019), IP: "172.20.0.11", PodCIDR: "10.244.1.0/24"},
	{Name: "win-2022", Windows: true, KubeletVersion: "v1.33.2", Profile: sim.WS2022.Name, Build: windowsBuild(sim.WS2022), IP: "172.20.0.12", PodCIDR: "10.244.2.0/24"},
	{Name: "win-2025", Windows: true, KubeletVersion: "v1.34.1", Profile: sim.WS2025.Name, Build: windowsBuild(sim.WS2025), IP: "172.20.0.13", PodCIDR: "10.244.3.0/24"},
	{Name: "linux-1", KubeletVersion: "v1.34.1", IP: "172.20.0.10", PodCIDR: "10.244.0.0/24"},
}

// windowsBuild is the node.kubernetes.io/windows-build label of a node of profile p, e.g.
// "10.0.20348".
func windowsBuild(p sim.Profile) string { return fmt.Sprintf("10.0.%d", p.Build) }

// LoopbackIP is the node's stand-in address on this machine for what cloud load balancers probe:
// 127.0.<subnet>.<last byte of the node IP>. Simulated node IPs are data, never destinations, so
// each node's health servers listen on a loopback address of its own instead; callers running at
// the same time (the demo, the end-to-end tests) pick different subnets.
func (n Node) LoopbackIP(subnet byte) string {
	ip := net.ParseIP(n.IP).To4()
	return fmt.Sprintf("127.0.%d.%d", subnet, ip[3])
}

// SystemNamespace is the namespace winproxy is installed in on the simulated cluster, where the
// agents keep their heartbeat Leases (CreateNodes creates it, as installing winproxy would).
const SystemNamespace = "winproxy-system"

// CNILabel marks the nodes that run Calico, which the sample config selects.
const CNILabel = "winproxy.io/cni"

// Object returns the Node object (metadata and spec; status is set by CreateNodes).
func (n Node) Object() *corev1.Node {
	os := "linux"
	labels := map[string]string{}
	if n.Windows {
		os = "windows"
		labels["node.kubernetes.io/windows-build"] = n.Build
	}
	labels[v1alpha1.OSLabel] = os
	labels["kubernetes.io/hostname"] = n.Name
	labels[CNILabel] = "calico"
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels},
		Spec:       corev1.NodeSpec{PodCIDR: n.PodCIDR, PodCIDRs: []string{n.PodCIDR}},
	}
}

func (n Node) status() corev1.NodeStatus {
	return corev1.NodeStatus{
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.IP}, {Type: corev1.NodeHostName, Address: n.Name}},
		NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: n.KubeletVersion, OperatingSystem: n.os(), Architecture: "amd64"},
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "simulated by winproxy's fleet", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}},
	}
}

func (n Node) os() string {
	if n.Windows {
		return "windows"
	}
	return "linux"
}

// Find returns the fleet node with the given name.
func Find(name string) (Node, bool) {
	for _, n := range Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}

// CreateNodes creates the nodes with their status (addresses, kubelet version, Ready), as kubelets
// would, and SystemNamespace. Existing nodes are left as they are.
func CreateNodes(ctx context.Context, c client.Client, nodes []Node) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SystemNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", SystemNamespace, err)
	}
	for _, n := range nodes {
		obj := n.Object()
		if err := c.Create(ctx, obj); err != nil {
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			return fmt.Errorf("creating node %s: %w", n.Name, err)
		}
		obj.Status = n.status()
		if err := c.Status().Update(ctx, obj); err != nil {
			return fmt.Errorf("setting the status of node %s: %w", n.Name, err)
		}
	}
	return nil
}
