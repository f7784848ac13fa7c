package engine

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/featuregate"
	"github.com/winproxy/winproxy/internal/testbuild"
)

// Topology-aware routing (topology.go, docs/topology.md).

// tep is an endpoint of a topology case: local endpoints are on this node
// and have an HNS endpoint, remote ones are on node-2.
type tep struct {
	ip    string
	local bool
	cond  string // as testbuild.Conditions reads it
	zones []string
	nodes []string
}

// topoInput builds the input of one service, svc1, with one slice of eps,
// on a node in zone (nil: no zone label).
func topoInput(cfg v1alpha1.ResolvedProxyConfig, zone *string, svc *corev1.Service, eps []tep) Input {
	node := testbuild.Node(nodeName)
	if zone != nil {
		// Labels, not Zone: a zone label with an empty value is a case of its own.
		node = testbuild.Node(nodeName, testbuild.Labels(map[string]string{corev1.LabelTopologyZone: *zone}))
	}
	v := view(false, ws2022)
	var es []testbuild.SliceOption
	for _, e := range eps {
		n := "node-2"
		if e.local {
			n = nodeName
			v.Endpoints = append(v.Endpoints, localEP("EP-"+e.ip, e.ip))
		}
		es = append(es, testbuild.Endpoint(e.ip, n, testbuild.Conditions(e.cond)))
	}
	s := slice("svc1", "s1", 80, es...)
	for i, e := range eps {
		if e.zones == nil && e.nodes == nil {
			continue
		}
		h := &discoveryv1.EndpointHints{}
		for _, z := range e.zones {
			h.ForZones = append(h.ForZones, discoveryv1.ForZone{Name: z})
		}
		for _, n := range e.nodes {
			h.ForNodes = append(h.ForNodes, discoveryv1.ForNode{Name: n})
		}
		s.Endpoints[i].Hints = h
	}
	return Input{NodeName: nodeName, Config: cfg, Node: node, HNS: v,
		Services: []*corev1.Service{svc}, EndpointSlices: []*discoveryv1.EndpointSlice{s}}
}

// topoConfig is a node that honours hints, for nodes too when nodeHints.
func topoConfig(nodeHints bool) v1alpha1.ResolvedProxyConfig {
	c := config(false)
	c.TopologyAwareRouting = true
	c.FeatureGates = map[string]bool{featuregate.PreferSameTrafficDistribution: nodeHints}
	return c
}

// backendsOf lists the backend IPs of the service's LB of kind (nil when
// there is none).
func backendsOf(d *Desired, kind Kind) []string {
	for _, lb := range d.SortedLoadBalancers() {
		if lb.Key.Kind != kind {
			continue
		}
		out := []string{}
		for _, b := range lb.Backends {
			out = append(out, b.IP.String())
		}
		return out
	}
	return nil
}

// TestTopologyAsKubeProxy mirrors kube-proxy's own cases for topology
// (TestCategorizeEndpoints, pkg/proxy/topology_test.go, v1.37.2), one for
// one and in the same order, in terms of HNS load balancers: kube-proxy's
// cluster endpoints are the backends of the ClusterIP LB (and of the
// node-port LB under externalTrafficPolicy: Cluster), its local endpoints
// those of the ClusterIP LB under internalTrafficPolicy: Local and of the
// node-port LB under externalTrafficPolicy: Local (on an HNS with DSR, as
// winkernel requires). Where winkernel's own rules make the answer differ
// from Linux for reasons that have nothing to do with topology, the case
// says so and expects winkernel's answer.
func TestTopologyAsKubeProxy(t *testing.T) {
	zoneA, zoneB, zoneC, empty := new("zone-a"), new("zone-b"), new("zone-c"), new("")
	ready, unready := "", "-r"
	etpLocalNP := []testbuild.ServiceOption{testbuild.NodePort(3001), testbuild.ExternalTrafficLocal()}
	itpLocalNP := []testbuild.ServiceOption{testbuild.NodePort(3001), testbuild.InternalTrafficLocal()}
	for _, tc := range []struct {
		name      string
		nodeHints bool
		zone      *string
		svc       []testbuild.ServiceOption
		eps       []tep
		// clusterIP and nodePort are the backends of those LBs; nil: no LB.
		clusterIP, nodePort []string
		// routed is the node's count of services routed by topology.
		routed int
	}{
		{
			name: "should use topology since all endpoints have hints, node has a zone label and there are endpoints for the node's zone",
			zone: zoneA,
			eps: []tep{{ip: "10.1.2.3", zones: []string{"zone-a"}}, {ip: "10.1.2.4", zones: []string{"zone-b"}},
				{ip: "10.1.2.5", zones: []string{"zone-c"}}, {ip: "10.1.2.6", zones: []string{"zone-a"}}},
			clusterIP: []string{"10.1.2.3", "10.1.2.6"}, routed: 1,
		},
		{
			name: "externalTrafficPolicy: Local, topology ignored for Local endpoints",
			zone: zoneA, svc: etpLocalNP,
			eps: []tep{{ip: "10.1.2.3", local: true, zones: []string{"zone-a"}}, {ip: "10.1.2.4", local: true, zones: []string{"zone-b"}},
				{ip: "10.1.2.5", zones: []string{"zone-c"}}, {ip: "10.1.2.6", zones: []string{"zone-a"}}},
			clusterIP: []string{"10.1.2.3", "10.1.2.6"}, nodePort: []string{"10.1.2.3", "10.1.2.4"}, routed: 1,
		},
		{
			name: "internalTrafficPolicy: Local, topology ignored for Local endpoints",
			zone: zoneA, svc: itpLocalNP,
			eps: []tep{{ip: "10.1.2.3", local: true, zones: []string{"zone-a"}}, {ip: "10.1.2.4", local: true, zones: []string{"zone-b"}},
				{ip: "10.1.2.5", zones: []string{"zone-c"}}, {ip: "10.1.2.6", zones: []string{"zone-a"}}},
			clusterIP: []string{"10.1.2.3", "10.1.2.4"}, nodePort: []string{"10.1.2.3", "10.1.2.6"}, routed: 1,
		},
		{
			name:      "empty node labels",
			eps:       []tep{{ip: "10.1.2.3", zones: []string{"zone-a"}}},
			clusterIP: []string{"10.1.2.3"},
		},
		{
			name: "empty zone label", zone: empty,
			eps:       []tep{{ip: "10.1.2.3", zones: []string{"zone-a"}}},
			clusterIP: []string{"10.1.2.3"},
		},
		{
			name: "node in different zone, no endpoint filtering", zone: zoneB,
			eps:       []tep{{ip: "10.1.2.3", zones: []string{"zone-a"}}},
			clusterIP: []string{"10.1.2.3"},
		},
		{
			name: "unready endpoint", zone: zoneA,
			eps: []tep{{ip: "10.1.2.3", zones: []string{"zone-a"}}, {ip: "10.1.2.4", zones: []string{"zone-b"}},
				{ip: "10.1.2.5", zones: []string{"zone-c"}}, {ip: "10.1.2.6", cond: unready, zones: []string{"zone-a"}}},
			clusterIP: []string{"10.1.2.3"}, routed: 1,
		},
		{
			name: "only unready endpoints in same zone (should not filter)", zone: zoneA,
			eps: []tep{{ip: "10.1.2.3", cond: unready, zones: []string{"zone-a"}}, {ip: "10.1.2.4", zones: []string{"zone-b"}},
				{ip: "10.1.2.5", zones: []string{"zone-c"}}, {ip: "10.1.2.6", cond: unready, zones: []string{"zone-a"}}},
			clusterIP: []string{"10.1.2.4", "10.1.2.5"},
		},
		{
			name: "missing hints, no filtering applied", zone: zoneA,
			eps: []tep{{ip: "10.1.2.3", zones: []string{"zone-a"}}, {ip: "10.1.2.4", zones: []string{"zone-b"}},
				{ip: "10.1.2.5"}, {ip: "10.1.2.6", zones: []string{"zone-a"}}},
			clusterIP: []string{"10.1.2.3", "10.1.2.4", "10.1.2.5", "10.1.2.6"},
		},
		{
			name: "multiple hints per endpoint, filtering includes any endpoint with zone included", zone: zoneC,
			eps: []tep{{ip: "10.1.2.3", zones: []string{"zone-a", "zone-b", "zone-c"}}, {ip: "10.1.2.4", zones: []string{"zone-b", "zone-c"}},
				{ip: "10.1.2.5", zones: []string{"zone-b", "zone-d"}}, {ip: "10.1.2.6", zones: []string{"zone-c"}}},
			clusterIP: []string{"10.1.2.3", "10.1.2.4", "10.1.2.6"}, routed: 1,
		},
		{
			name: "PreferSameNode falls back to same-zone when feature gate disabled", zone: zoneA,
			eps: []tep{{ip: "10.1.2.3", zones: []string{"zone-a"}, nodes: []string{nodeName}}, {ip: "10.1.2.4", zones: []string{"zone-b"}, nodes: []string{"node-2"}},
				{ip: "10.1.2.5", zones: []string{"zone-c"}, nodes: []string{"node-3"}}, {ip: "10.1.2.6", zones: []string{"zone-a"}, nodes: []string{"node-4"}}},
			clusterIP: []string{"10.1.2.3", "10.1.2.6"}, routed: 1,
		},
		{
			name: "PreferSameNode available", nodeHints: true, zone: zoneA,
			eps: []tep{{ip: "10.1.2.3", zones: []string{"zone-a"}, nodes: []string{nodeName}}, {ip: "10.1.2.4", zones: []string{"zone-b"}, nodes: []string{"node-2"}},
				{ip: "10.1.2.5", zones: []string{"zone-c"}, nodes: []string{"node-3"}}, {ip: "10.1.2.6", zones: []string{"zone-a"}, nodes: []string{"node-4"}}},
			clusterIP: []string{"10.1.2.3"}, routed: 1,
		},
		{
			name: "PreferSameNode ignored if some endpoints unhinted", nodeHints: true, zone: zoneA,
			eps: []tep{{ip: "10.1.2.3", zones: []string{"zone-a"}, nodes: []string{nodeName}}, {ip: "10.1.2.4"},
				{ip: "10.1.2.5", zones: []string{"zone-c"}, nodes: []string{"node-3"}}, {ip: "10.1.2.6", zones: []string{"zone-a"}, nodes: []string{"node-4"}}},
			clusterIP: []string{"10.1.2.3", "10.1.2.4", "10.1.2.5", "10.1.2.6"},
		},
		{
			// Upstream's node is node-0, hinted for none; here the node
			// (node-1) is hinted for none.
			name: "PreferSameNode falls back to PreferSameZone if no endpoint for node", nodeHints: true, zone: zoneA,
			eps: []tep{{ip: "10.1.2.3", zones: []string{"zone-a"}, nodes: []string{"node-5"}}, {ip: "10.1.2.4", zones: []string{"zone-b"}, nodes: []string{"node-2"}},
				{ip: "10.1.2.5", zones: []string{"zone-c"}, nodes: []string{"node-3"}}, {ip: "10.1.2.6", zones: []string{"zone-a"}, nodes: []string{"node-4"}}},
			clusterIP: []string{"10.1.2.3", "10.1.2.6"}, routed: 1,
		},
		{
			name: "conflicting topology and localness require merging allEndpoints", zone: zoneA, svc: etpLocalNP,
			eps: []tep{{ip: "10.0.1.0", local: true, zones: []string{"zone-a"}}, {ip: "10.0.1.1", local: true, zones: []string{"zone-b"}},
				{ip: "10.0.1.2", zones: []string{"zone-a"}}, {ip: "10.0.1.3", zones: []string{"zone-b"}}},
			clusterIP: []string{"10.0.1.0", "10.0.1.2"}, nodePort: []string{"10.0.1.0", "10.0.1.1"}, routed: 1,
		},
		{
			name: "internalTrafficPolicy: Local, with empty endpoints", svc: []testbuild.ServiceOption{testbuild.InternalTrafficLocal()},
		},
		{
			name: "internalTrafficPolicy: Local, but all endpoints are remote", svc: []testbuild.ServiceOption{testbuild.InternalTrafficLocal()},
			eps: []tep{{ip: "10.0.1.0"}, {ip: "10.0.1.1"}},
		},
		{
			name: "internalTrafficPolicy: Local, all endpoints are local", svc: []testbuild.ServiceOption{testbuild.InternalTrafficLocal()},
			eps:       []tep{{ip: "10.0.1.0", local: true}, {ip: "10.0.1.1", local: true}},
			clusterIP: []string{"10.0.1.0", "10.0.1.1"},
		},
		{
			name: "internalTrafficPolicy: Local, some endpoints are local", svc: []testbuild.ServiceOption{testbuild.InternalTrafficLocal()},
			eps:       []tep{{ip: "10.0.1.0", local: true}, {ip: "10.0.1.1"}},
			clusterIP: []string{"10.0.1.0"},
		},
		{
			name: "Cluster traffic policy, endpoints not Ready",
			eps:  []tep{{ip: "10.0.1.0", cond: "-r-s"}, {ip: "10.0.1.1", cond: "-r-s"}},
		},
		{
			name:      "Cluster traffic policy, some endpoints are Ready",
			eps:       []tep{{ip: "10.0.1.0", cond: "-r-s"}, {ip: "10.0.1.1", cond: ready}},
			clusterIP: []string{"10.0.1.1"},
		},
		{
			// winkernel falls back to serving terminating endpoints only for
			// services with an ingress IP: the case is such a service. Its
			// node-port LB is left out while every endpoint terminates, so
			// that cloud load balancers drain the node.
			name: "Cluster traffic policy, all endpoints are terminating", svc: []testbuild.ServiceOption{testbuild.LoadBalancer(3001, "11.21.31.41")},
			eps:       []tep{{ip: "10.0.1.0", local: true, cond: "-r+s+t"}, {ip: "10.0.1.1", cond: "-r+s+t"}},
			clusterIP: []string{"10.0.1.0", "10.0.1.1"},
		},
		{
			name: "iTP: Local, eTP: Cluster, some endpoints local", svc: itpLocalNP,
			eps:       []tep{{ip: "10.0.1.0", local: true}, {ip: "10.0.1.1"}},
			clusterIP: []string{"10.0.1.0"}, nodePort: []string{"10.0.1.0", "10.0.1.1"},
		},
		{
			name: "iTP: Cluster, eTP: Local, some endpoints local", svc: etpLocalNP,
			eps:       []tep{{ip: "10.0.1.0", local: true}, {ip: "10.0.1.1"}},
			clusterIP: []string{"10.0.1.0", "10.0.1.1"}, nodePort: []string{"10.0.1.0"},
		},
		{
			// kube-proxy computes cluster endpoints here for traffic from
			// the node's pods to external addresses (short circuiting); HNS
			// has no such path, and no load balancer uses them.
			name: "iTP: Local, eTP: Local, some endpoints local", svc: append([]testbuild.ServiceOption{testbuild.InternalTrafficLocal()}, etpLocalNP...),
			eps:       []tep{{ip: "10.0.1.0", local: true}, {ip: "10.0.1.1"}},
			clusterIP: []string{"10.0.1.0"}, nodePort: []string{"10.0.1.0"},
		},
		{
			name: "iTP: Local, eTP: Local, all endpoints remote", svc: append([]testbuild.ServiceOption{testbuild.InternalTrafficLocal()}, etpLocalNP...),
			eps: []tep{{ip: "10.0.1.0"}, {ip: "10.0.1.1"}},
		},
		{
			name: "iTP: Local, eTP: Local, all endpoints remote and terminating", svc: append([]testbuild.ServiceOption{testbuild.InternalTrafficLocal()}, etpLocalNP...),
			eps: []tep{{ip: "10.0.1.0", cond: "-r+s+t"}, {ip: "10.0.1.1", cond: "-r+s+t"}},
		},
		{
			// Without an ingress IP winkernel never uses terminating
			// endpoints, so the node-port LB has no local backend and is not
			// programmed; kube-proxy would use the terminating 10.0.1.2.
			name: "iTP: Cluster, eTP: Local, with terminating endpoints", svc: etpLocalNP,
			eps: []tep{{ip: "10.0.1.0"}, {ip: "10.0.1.1", local: true, cond: "-r-s"},
				{ip: "10.0.1.2", local: true, cond: "-r+s+t"}, {ip: "10.0.1.3", cond: "-r+s+t"}},
			clusterIP: []string{"10.0.1.0"},
		},
		{
			name: "externalTrafficPolicy ignored if not externally accessible", svc: []testbuild.ServiceOption{testbuild.ExternalTrafficLocal()},
			eps:       []tep{{ip: "10.0.1.0"}, {ip: "10.0.1.1", local: true}},
			clusterIP: []string{"10.0.1.0", "10.0.1.1"},
		},
		{
			name: "no cluster endpoints for iTP:Local internal-only service", svc: []testbuild.ServiceOption{testbuild.InternalTrafficLocal()},
			eps:       []tep{{ip: "10.0.1.0"}, {ip: "10.0.1.1", local: true}},
			clusterIP: []string{"10.0.1.1"},
		},
		{
			name: "empty endpoints when no service endpoints exist",
		},
		{
			name: "single endpoint not ready, not serving, not terminating", zone: zoneA,
			eps: []tep{{ip: "10.0.1.0", cond: "-r-s-t"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Compute(topoInput(topoConfig(tc.nodeHints), tc.zone, service("svc1", tc.svc...), tc.eps))
			if diff := cmp.Diff(tc.clusterIP, backendsOf(d, KindClusterIP)); diff != "" {
				t.Errorf("ClusterIP LB backends (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.nodePort, backendsOf(d, KindNodePort)); diff != "" {
				t.Errorf("node-port LB backends (-want +got):\n%s", diff)
			}
			if got := d.Effective.TopologyRoutedServices; got != tc.routed {
				t.Errorf("TopologyRoutedServices = %d, want %d", got, tc.routed)
			}
		})
	}
}

// TestTopologyOnWindows covers what kube-proxy's cases do not: the
// switch, each kind of load balancer, remote endpoints, IPv6, and a zone
// whose only endpoints have no HNS endpoint yet.
func TestTopologyOnWindows(t *testing.T) {
	zoneA := new("zone-a")
	twoZones := []tep{{ip: "192.168.1.5", local: true, zones: []string{"zone-b"}}, {ip: "192.168.2.3", zones: []string{"zone-a"}},
		{ip: "192.168.2.4", zones: []string{"zone-b"}}}
	for _, tc := range []struct {
		name    string
		cfg     v1alpha1.ResolvedProxyConfig
		svc     *corev1.Service
		eps     []tep
		mutate  func(*Input)
		lbs     []string
		remotes []string
		// problems are the reasons reported.
		problems []string
		routed   int
	}{
		{
			name: "topologyAwareRouting false programs what winkernel does", cfg: config(false), svc: service("svc1"), eps: twoZones,
			lbs:     []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-192.168.1.5 192.168.2.3 192.168.2.4]"},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03", "192.168.2.4 mac=02-11-c0-a8-02-04"},
		},
		{
			name: "only the zone's remote backends get remote endpoints", cfg: topoConfig(false), svc: service("svc1"), eps: twoZones,
			lbs:     []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]"},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"}, routed: 1,
		},
		{
			// externalTrafficPolicy: Cluster sends external traffic to the
			// cluster set, as kube-proxy's external chain jumps to its
			// cluster chain; Local keeps its local backends.
			name: "external load balancers follow the policy they have", cfg: topoConfig(false),
			svc: service("svc1", testbuild.LoadBalancer(3001, "11.21.31.41"), testbuild.ExternalIPs("50.0.0.1")), eps: twoZones,
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=0 pm=18 svip=- be=[192.168.2.3]",
				"IPv4/externalip 50.0.0.1:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=- be=[192.168.2.3]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=16 svip=- be=[192.168.2.3]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"}, routed: 1,
		},
		{
			name: "externalTrafficPolicy: Local keeps the external load balancers local", cfg: topoConfig(false),
			svc: service("svc1", testbuild.LoadBalancer(3001, "11.21.31.41"), testbuild.ExternalIPs("50.0.0.1"), testbuild.ExternalTrafficLocal()), eps: twoZones,
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=1 pm=18 svip=- be=[192.168.1.5@EP-192.168.1.5]",
				"IPv4/externalip 50.0.0.1:80/TCP ns/svc1:p80 int=80 flags=1 pm=16 svip=- be=[192.168.1.5@EP-192.168.1.5]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=16 svip=- be=[192.168.1.5@EP-192.168.1.5]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"}, routed: 1,
		},
		{
			// Both policies Local: no load balancer uses the cluster set, so
			// hints are not consulted and the service is not counted.
			name: "both policies Local consult no hints", cfg: topoConfig(false),
			svc: service("svc1", testbuild.LoadBalancer(3001, "11.21.31.41"), testbuild.ExternalTrafficLocal(), testbuild.InternalTrafficLocal()), eps: twoZones,
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-192.168.1.5]",
				"IPv4/nodeport *:3001/TCP ns/svc1:p80 int=80 flags=1 pm=18 svip=- be=[192.168.1.5@EP-192.168.1.5]",
				"IPv4/ingress 11.21.31.41:80/TCP ns/svc1:p80 int=80 flags=1 pm=16 svip=- be=[192.168.1.5@EP-192.168.1.5]",
			},
		},
		{
			// kube-proxy's filter cannot come out empty: a ready endpoint of
			// the zone exists. Here it has no HNS endpoint yet, so the zone
			// has no backend: the node uses every endpoint rather than none.
			name: "a zone whose only endpoint has no HNS endpoint yet uses every endpoint", cfg: topoConfig(false), svc: service("svc1"),
			eps:     []tep{{ip: "192.168.1.5", local: true, zones: []string{"zone-a"}}, {ip: "192.168.2.4", zones: []string{"zone-b"}}},
			mutate:  func(in *Input) { in.HNS.Endpoints = nil },
			lbs:     []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.4]"},
			remotes: []string{"192.168.2.4 mac=02-11-c0-a8-02-04"}, problems: []string{"ns/svc1 " + v1alpha1.ReasonLocalEndpointNotFound},
		},
		{
			// Hints are the family's: the IPv6 slice has none, so IPv6 uses
			// every endpoint while IPv4 follows its hints.
			name: "each family follows its own slices' hints", cfg: func() v1alpha1.ResolvedProxyConfig {
				c := topoConfig(false)
				c.DualStack, c.NodeIPs = true, []string{nodeIP, "fd00:10::1"}
				return c
			}(),
			svc: service("svc1", testbuild.ClusterIPs("10.20.30.41", "fd00:20::41")), eps: twoZones[1:],
			mutate: func(in *Input) {
				in.HNS.Capabilities = ws2022
				in.EndpointSlices = append(in.EndpointSlices, sliceFam("svc1", "s6", discoveryv1.AddressTypeIPv6, 80,
					testbuild.Endpoint("fd02::3", "node-2"), testbuild.Endpoint("fd02::4", "node-2")))
			},
			lbs: []string{
				"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				"IPv6/clusterip fd00:20::41:80/TCP ns/svc1:p80 int=80 flags=2 pm=0 svip=- be=[fd02::3 fd02::4]",
			},
			remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03", "fd02::3 mac=02-11-03-00-00-00", "fd02::4 mac=02-11-04-00-00-00"}, routed: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := topoInput(tc.cfg, zoneA, tc.svc, tc.eps)
			if tc.mutate != nil {
				tc.mutate(&in)
			}
			d := Compute(in)
			checkDesired(t, d, tc.lbs, tc.remotes, tc.problems)
			if got := d.Effective.TopologyRoutedServices; got != tc.routed {
				t.Errorf("TopologyRoutedServices = %d, want %d", got, tc.routed)
			}
		})
	}
}

// TestIncrementalZoneChange moves the node between zones and turns the
// switch and the node-hint gate on and off: after each step the Incremental
// equals Compute, and a zone change recomputes only the services whose
// topology read the zone.
func TestIncrementalZoneChange(t *testing.T) {
	hinted := func(name, cip string, zones, nodes [][]string) (*corev1.Service, *discoveryv1.EndpointSlice) {
		var eps []tep
		for i := range zones {
			eps = append(eps, tep{ip: fmt.Sprintf("192.168.2.%d", 3+i), zones: zones[i], nodes: nodes[i]})
		}
		in := topoInput(topoConfig(false), nil, service(name, testbuild.ClusterIPs(cip)), eps)
		s := in.EndpointSlices[0]
		s.Name, s.Labels[discoveryv1.LabelServiceName] = name+"-a", name
		return in.Services[0], s
	}
	zonal, zonalSlice := hinted("zonal", "10.20.30.41", [][]string{{"zone-a"}, {"zone-b"}, {"zone-b"}}, make([][]string, 3))
	perNode, perNodeSlice := hinted("pernode", "10.20.30.42", [][]string{{"zone-a"}, {"zone-b"}, {"zone-a"}},
		[][]string{{nodeName}, {"node-2"}, {"node-3"}})
	plain, plainSlice := hinted("plain", "10.20.30.43", make([][]string, 2), make([][]string, 2))
	in := Input{NodeName: nodeName, Config: topoConfig(true), HNS: view(false, ws2022),
		Services: []*corev1.Service{zonal, perNode, plain}, EndpointSlices: []*discoveryv1.EndpointSlice{zonalSlice, perNodeSlice, plainSlice}}
	node := func(zone string) *corev1.Node { return testbuild.Node(nodeName, testbuild.Zone(zone)) }
	inc := NewIncremental()
	for _, s := range in.Services {
		inc.SetService(s)
	}
	for _, s := range in.EndpointSlices {
		inc.SetEndpointSlice(s)
	}
	const (
		zonalA   = "IPv4/clusterip 10.20.30.41:80/TCP ns/zonal:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]"
		zonalB   = "IPv4/clusterip 10.20.30.41:80/TCP ns/zonal:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.4 192.168.2.5]"
		zonalAll = "IPv4/clusterip 10.20.30.41:80/TCP ns/zonal:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3 192.168.2.4 192.168.2.5]"
		nodeOnly = "IPv4/clusterip 10.20.30.42:80/TCP ns/pernode:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]"
		nodeA    = "IPv4/clusterip 10.20.30.42:80/TCP ns/pernode:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3 192.168.2.5]"
		nodeB    = "IPv4/clusterip 10.20.30.42:80/TCP ns/pernode:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.4]"
		nodeAll  = "IPv4/clusterip 10.20.30.42:80/TCP ns/pernode:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3 192.168.2.4 192.168.2.5]"
		plainAll = "IPv4/clusterip 10.20.30.43:80/TCP ns/plain:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3 192.168.2.4]"
	)
	for i, st := range []struct {
		zone      string
		topology  bool
		nodeHints bool
		lbs       []string
		routed    int
		// recomputed are the services a zone change recomputes; nil: not
		// checked (the config changed, every service is recomputed).
		recomputed []string
	}{
		{zone: "zone-a", topology: true, nodeHints: true, lbs: []string{nodeOnly, plainAll, zonalA}, routed: 2},
		// Same-node hints do not depend on the zone: only zonal is redone.
		{zone: "zone-b", topology: true, nodeHints: true, lbs: []string{nodeOnly, plainAll, zonalB}, routed: 2, recomputed: []string{"ns/zonal"}},
		{zone: "zone-b", topology: true, lbs: []string{nodeB, plainAll, zonalB}, routed: 2},
		{zone: "zone-a", topology: true, lbs: []string{nodeA, plainAll, zonalA}, routed: 2, recomputed: []string{"ns/pernode", "ns/zonal"}},
		{zone: "zone-c", topology: true, lbs: []string{nodeAll, plainAll, zonalAll}, recomputed: []string{"ns/pernode", "ns/zonal"}},
		{zone: "", topology: true, lbs: []string{nodeAll, plainAll, zonalAll}, recomputed: []string{"ns/pernode", "ns/zonal"}},
		{zone: "zone-b", lbs: []string{nodeAll, plainAll, zonalAll}},
		// With the switch off nothing reads the zone.
		{zone: "zone-a", lbs: []string{nodeAll, plainAll, zonalAll}, recomputed: []string{}},
		{zone: "zone-a", topology: true, lbs: []string{nodeA, plainAll, zonalA}, routed: 2},
	} {
		in.Node = node(st.zone)
		in.Config.TopologyAwareRouting = st.topology
		in.Config.FeatureGates = map[string]bool{featuregate.PreferSameTrafficDistribution: st.nodeHints}
		inc.SetNode(nodeName, in.Config, in.Node, in.HNS)
		if st.recomputed != nil {
			if got := slices.Sorted(maps.Keys(inc.dirty)); !slices.Equal(got, st.recomputed) {
				t.Errorf("step %d: zone %q recomputes %v, want %v", i, st.zone, got, st.recomputed)
			}
		}
		got := inc.Desired()
		if diff := cmp.Diff(st.lbs, lbs(got)); diff != "" {
			t.Errorf("step %d: load balancers (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff(summary(Compute(in)), summary(got), cmpAddr); diff != "" {
			t.Errorf("step %d: Incremental differs from Compute (-compute +incremental):\n%s", i, diff)
		}
		if n := got.Effective.TopologyRoutedServices; n != st.routed {
			t.Errorf("step %d: TopologyRoutedServices = %d, want %d", i, n, st.routed)
		}
	}
}
