//go:build !windows

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/fleet"
	"github.com/winproxy/winproxy/internal/testenv"
)

// TestTopologyAwareRouting (issue #16): Windows nodes in two zones give the same ClusterIP
// different backends, from the hints the EndpointSlice controller writes for a Service's
// trafficDistribution, as kube-proxy does on Linux and winkernel does not.
func TestTopologyAwareRouting(t *testing.T) {
	s := startSystem(t)
	zones := map[string]string{"win-2019": "zone-a", "win-2022": "zone-a", "win-2025": "zone-b", "linux-1": "zone-b"}
	t.Cleanup(func() {
		deleteSystemObjects(t)
		for node := range zones {
			setZone(t, node, "")
		}
	})
	for node, zone := range zones {
		setZone(t, node, zone)
	}
	applyConfig(t, func(*v1alpha1.WindowsProxyConfigSpec) {})
	// One pod per node; the controller hints each endpoint for its node's zone, and with
	// PreferSameNode for its node too.
	pods := func(last string) []fleet.Pod {
		return []fleet.Pod{{Node: "win-2019", IP: "10.244.1." + last}, {Node: "win-2022", IP: "10.244.2." + last},
			{Node: "win-2025", IP: "10.244.3." + last}, {Node: "linux-1", IP: "10.244.0." + last}}
	}
	createHintedService(t, "zonal", "10.0.0.110", corev1.ServiceTrafficDistributionPreferSameZone, pods("30"), zones)
	createHintedService(t, "nodelocal", "10.0.0.111", corev1.ServiceTrafficDistributionPreferSameNode, pods("31"), zones)
	for _, n := range windowsNodes() {
		s.syncPods(t, n.Name)
	}
	ready(t, systemConfig)
	if wpn := getWPN(t, "win-2019"); !wpn.Spec.Proxy.TopologyAwareRouting {
		t.Fatalf("topologyAwareRouting is not on by default: %+v", wpn.Spec.Proxy)
	}

	// expect waits until each node's ClusterIP load balancer at vip has the backends and the
	// node reports routed services routed by topology.
	expect := func(t *testing.T, vip string, want map[string]string, routed map[string]int32) {
		t.Helper()
		for node, backends := range want {
			testenv.Eventually(t, 60*time.Second, func() error {
				got := s.backendsOf(t, node, vip)
				if got != backends {
					return fmt.Errorf("%s: %s has backends %s, want %s", node, vip, got, backends)
				}
				if n := getWPN(t, node).Status.TopologyRoutedServices; n != routed[node] {
					return fmt.Errorf("%s reports %d services routed by topology, want %d", node, n, routed[node])
				}
				return nil
			})
			t.Logf("%s (%s): %s -> %s", node, zones[node], vip, backends)
		}
	}

	t.Run("each zone's nodes get their zone's backends for one ClusterIP", func(t *testing.T) {
		// zone-a: win-2019 and win-2022; zone-b: win-2025 and the Linux node.
		expect(t, "10.0.0.110", map[string]string{
			"win-2019": "10.244.1.30,10.244.2.30",
			"win-2022": "10.244.1.30,10.244.2.30",
			"win-2025": "10.244.0.30,10.244.3.30",
		}, map[string]int32{"win-2019": 2, "win-2022": 2, "win-2025": 2})
	})

	t.Run("hints for nodes need PreferSameTrafficDistribution at the node's version", func(t *testing.T) {
		// On by default from 1.34 (win-2025); alpha and off on 1.33 (win-2022); not in 1.32
		// (win-2019). Without it the zone hints are used, as kube-proxy of that version does.
		expect(t, "10.0.0.111", map[string]string{
			"win-2019": "10.244.1.31,10.244.2.31",
			"win-2022": "10.244.1.31,10.244.2.31",
			"win-2025": "10.244.3.31",
		}, map[string]int32{"win-2019": 2, "win-2022": 2, "win-2025": 2})
	})

	t.Run("a node moved to a zone no hint names uses every endpoint", func(t *testing.T) {
		setZone(t, "win-2025", "zone-c")
		zones["win-2025"] = "zone-c"
		// Its same-node hints do not depend on the zone.
		expect(t, "10.0.0.110", map[string]string{"win-2025": "10.244.0.30,10.244.1.30,10.244.2.30,10.244.3.30"},
			map[string]int32{"win-2025": 1})
		expect(t, "10.0.0.111", map[string]string{"win-2025": "10.244.3.31"}, map[string]int32{"win-2025": 1})
		expect(t, "10.0.0.110", map[string]string{"win-2019": "10.244.1.30,10.244.2.30"}, map[string]int32{"win-2019": 2})
	})

	t.Run("topologyAwareRouting false programs what winkernel does", func(t *testing.T) {
		applyConfig(t, func(spec *v1alpha1.WindowsProxyConfigSpec) { spec.TopologyAwareRouting = new(false) })
		ready(t, systemConfig)
		all := map[string]string{}
		none := map[string]int32{}
		for _, n := range windowsNodes() {
			all[n.Name], none[n.Name] = "10.244.0.30,10.244.1.30,10.244.2.30,10.244.3.30", 0
		}
		expect(t, "10.0.0.110", all, none)
	})
}

// setZone sets (or, with "", removes) a node's topology.kubernetes.io/zone label, as a cloud
// provider's node controller does.
func setZone(t *testing.T, node, zone string) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return err
		}
		if zone == "" {
			delete(n.Labels, corev1.LabelTopologyZone)
		} else {
			n.Labels[corev1.LabelTopologyZone] = zone
		}
		return env.Client.Update(ctx, n)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// createHintedService creates a ClusterIP service with a trafficDistribution and its
// EndpointSlice, hinted as the EndpointSlice controller hints it: each endpoint for its node's
// zone, and with PreferSameNode for its node too.
func createHintedService(t *testing.T, name, clusterIP, distribution string, pods []fleet.Pod, zones map[string]string) {
	t.Helper()
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fleet.Namespace},
		Spec: corev1.ServiceSpec{
			ClusterIP: clusterIP, Selector: map[string]string{"app": name}, TrafficDistribution: new(distribution),
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if err := env.Client.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-hinted", Namespace: fleet.Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "fleet.winproxy.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: new("http"), Protocol: new(corev1.ProtocolTCP), Port: new(int32(8080))}},
	}
	for _, p := range pods {
		e := fleet.Endpoint(p)
		e.Zone = new(zones[p.Node])
		e.Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: zones[p.Node]}}}
		if distribution == corev1.ServiceTrafficDistributionPreferSameNode {
			e.Hints.ForNodes = []discoveryv1.ForNode{{Name: p.Node}}
		}
		slice.Endpoints = append(slice.Endpoints, e)
	}
	if err := env.Client.Create(ctx, slice); err != nil {
		t.Fatal(err)
	}
}

// backendsOf is the backends column of a node's load balancer at vip, as `winproxy-agent hns
// dump` shows it ("" when there is none).
func (s *system) backendsOf(t *testing.T, node, vip string) string {
	t.Helper()
	for _, line := range strings.Split(s.table(t, node), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == vip {
			return f[len(f)-1]
		}
	}
	return ""
}
