package nodeinfo

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(mutate ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "win-1", Labels: map[string]string{"topology.kubernetes.io/zone": "a"},
			Annotations: map[string]string{"winproxy.io/source-vip": "10.244.1.2"}},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24", "fd00:1::/64"}},
		Status: corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeHostName, Address: "win-1"},
				{Type: corev1.NodeInternalIP, Address: "fd00::11"},
				{Type: corev1.NodeExternalIP, Address: "20.0.0.1"},
				{Type: corev1.NodeInternalIP, Address: "10.0.0.11"},
			},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.33.2"},
		},
	}
	for _, m := range mutate {
		m(n)
	}
	return n
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
