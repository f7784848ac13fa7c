package nodeinfo

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winproxy/winproxy/internal/testbuild"
)

// node is win-1 in zone a with a source-VIP annotation, both pod CIDR fields, kubelet v1.33.2 and
// addresses of every type, InternalIPs of both families among them, changed by opts.
func node(opts ...testbuild.NodeOption) *corev1.Node {
	base := []testbuild.NodeOption{
		testbuild.Zone("a"), testbuild.Annotations(map[string]string{"winproxy.io/source-vip": "10.244.1.2"}),
		func(n *corev1.Node) { n.Spec.PodCIDR = "10.244.1.0/24" }, testbuild.PodCIDRs("10.244.1.0/24", "fd00:1::/64"),
		testbuild.Addresses(corev1.NodeHostName, "win-1"), testbuild.InternalIPs("fd00::11"),
		testbuild.Addresses(corev1.NodeExternalIP, "20.0.0.1"), testbuild.InternalIPs("10.0.0.11"),
		testbuild.Kubelet("v1.33.2"),
	}
	return testbuild.Node("win-1", append(base, opts...)...)
}

func TestPodCIDRs(t *testing.T) {
	for name, tc := range map[string]struct {
		node *corev1.Node
		want []string
	}{
		"podCIDRs":     {node(), []string{"10.244.1.0/24", "fd00:1::/64"}},
		"only podCIDR": {node(func(n *corev1.Node) { n.Spec.PodCIDRs = nil }), []string{"10.244.1.0/24"}},
		"none":         {node(func(n *corev1.Node) { n.Spec = corev1.NodeSpec{} }), nil},
		"nil node":     {nil, nil},
	} {
		if diff := cmp.Diff(tc.want, PodCIDRs(tc.node)); diff != "" {
			t.Errorf("%s: PodCIDRs (-want +got):\n%s", name, diff)
		}
	}
}

func TestInternalIPs(t *testing.T) {
	if diff := cmp.Diff([]string{"fd00::11", "10.0.0.11"}, InternalIPs(node())); diff != "" {
		t.Errorf("InternalIPs (-want +got):\n%s", diff)
	}
	if got := InternalIPs(nil); got != nil {
		t.Errorf("InternalIPs(nil) = %v", got)
	}
}

func TestIPs(t *testing.T) {
	addrs := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, a := range s {
			out = append(out, netip.MustParseAddr(a))
		}
		return out
	}
	for name, tc := range map[string]struct {
		configured []string
		node       *corev1.Node
		want       []netip.Addr
	}{
		"InternalIPs, IPv4 first":    {nil, node(), addrs("10.0.0.11", "fd00::11")},
		"configured before the Node": {[]string{"fd00::99", "10.0.0.99", "bad"}, node(), addrs("10.0.0.99", "10.0.0.11", "fd00::99", "fd00::11")},
		"no node":                    {[]string{"10.0.0.99"}, nil, addrs("10.0.0.99")},
	} {
		if diff := cmp.Diff(tc.want, IPs(tc.configured, tc.node), cmp.Comparer(func(x, y netip.Addr) bool { return x == y })); diff != "" {
			t.Errorf("%s: IPs (-want +got):\n%s", name, diff)
		}
	}
}

func TestInputsChanged(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate            func(*corev1.Node)
		agent, controller bool
	}{
		"heartbeat": {func(n *corev1.Node) {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, LastHeartbeatTime: metav1.Now()}}
			n.ResourceVersion = "2"
		}, false, false},
		"labels":          {func(n *corev1.Node) { n.Labels["topology.kubernetes.io/zone"] = "b" }, true, true},
		"podCIDRs":        {func(n *corev1.Node) { n.Spec.PodCIDRs = n.Spec.PodCIDRs[:1] }, true, true},
		"podCIDR":         {func(n *corev1.Node) { n.Spec.PodCIDR = "10.244.9.0/24" }, true, true},
		"addresses":       {func(n *corev1.Node) { n.Status.Addresses = n.Status.Addresses[1:] }, true, true},
		"annotations":     {func(n *corev1.Node) { n.Annotations["winproxy.io/source-vip"] = "10.244.1.3" }, false, true},
		"kubelet version": {func(n *corev1.Node) { n.Status.NodeInfo.KubeletVersion = "v1.34.0" }, false, true},
	} {
		o, n := node(), node(tc.mutate)
		if got := AgentInputsChanged(o, n); got != tc.agent {
			t.Errorf("%s: AgentInputsChanged = %v, want %v", name, got, tc.agent)
		}
		if got := ControllerInputsChanged(o, n); got != tc.controller {
			t.Errorf("%s: ControllerInputsChanged = %v, want %v", name, got, tc.controller)
		}
	}
}
