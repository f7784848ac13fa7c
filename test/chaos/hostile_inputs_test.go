//go:build !windows

package chaos

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/fleet"
)

// hostileCases is the table of TestHostile: what an attacker or a careless admin could send.
func hostileCases() []hostileCase {
	return concat(
		configAdmissionCases(),
		nodeProxyAdmissionCases(),
		workloadAdmissionCases(),
		resolutionCases(),
		workloadCases(),
		chaosConfigCases(),
		nodeProxyCases(),
		topologyCases(),
	)
}

func concat(lists ...[]hostileCase) []hostileCase {
	var out []hostileCase
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// objName turns a case name into a name for its objects: a DNS label, unique by a hash of the
// whole case name.
func objName(caseName string) string {
	slug := strings.Trim(nonName.ReplaceAllString(strings.ToLower(caseName), "-"), "-")
	if len(slug) > 40 {
		slug = strings.TrimRight(slug[:40], "-")
	}
	h := fnv.New32a()
	h.Write([]byte(caseName))
	return fmt.Sprintf("hx-%s-%06x", slug, h.Sum32()&0xffffff)
}

// --- refused at admission ------------------------------------------------------------------

// maxUnavailableRule is the CRD's message for a bad rollout.maxUnavailable.
const maxUnavailableRule = "rollout.maxUnavailable must be a number from 1 to 2147483647 or a percentage from 1% to 100%"

// refusedObject is a WindowsProxyConfig or WindowsProxyNode, written as YAML, that the apiserver
// must refuse with a message containing want.
func refusedObject(caseName, kind, spec string, want ...string) hostileCase {
	name := objName(caseName)
	return hostileCase{
		name: caseName, group: groupAdmission, rejected: want,
		send: func(ctx context.Context, x *hostile) error { return x.createObject(ctx, kind, name, spec) },
		undo: func(ctx context.Context, x *hostile) error {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(v1alpha1.GroupVersion.String())
			u.SetKind(kind)
			u.SetName(name)
			return client.IgnoreNotFound(x.c.Delete(ctx, u))
		},
	}
}

func configAdmissionCases() []hostileCase {
	cfg := func(name, spec string, want ...string) hostileCase {
		return refusedObject("config: "+name, "WindowsProxyConfig", spec, want...)
	}
	cbr0 := "network: {name: cbr0}\n"
	staticVIP := func(addr string) string {
		return fmt.Sprintf("network: {name: vxlan0, type: Overlay}\noverlay: {sourceVIP: {strategy: Static, static: {addresses: [{nodeName: win-2025, address: %q}]}}}", addr)
	}
	const unicast = "address must be a unicast address a pod could have"
	const ipv4 = "address must be a valid IPv4 address: overlay networks are IPv4 only"
	const gateName = "featureGates keys must be feature gate names such as WinDSR"
	const busyPort = "healthCheck.port must not be a port the node already uses"
	var gates33, addresses1001 strings.Builder
	for i := range 33 {
		fmt.Fprintf(&gates33, "Gate%d: true, ", i)
	}
	for i := range 1001 {
		fmt.Fprintf(&addresses1001, "{nodeName: n%d, address: 10.244.9.%d}, ", i, i%250+1)
	}
	return []hostileCase{
		cfg("maxUnavailable 2147483648 (beyond int32)", cbr0+"rollout: {maxUnavailable: 2147483648}", maxUnavailableRule),
		cfg("maxUnavailable -1", cbr0+"rollout: {maxUnavailable: -1}", maxUnavailableRule),
		cfg("maxUnavailable 0", cbr0+"rollout: {maxUnavailable: 0}", maxUnavailableRule),
		cfg("maxUnavailable 0%", cbr0+`rollout: {maxUnavailable: "0%"}`, maxUnavailableRule),
		cfg("maxUnavailable 101%", cbr0+`rollout: {maxUnavailable: "101%"}`, maxUnavailableRule),
		cfg("maxUnavailable abc", cbr0+"rollout: {maxUnavailable: abc}", maxUnavailableRule),
		cfg("maxUnavailable empty string", cbr0+`rollout: {maxUnavailable: ""}`, maxUnavailableRule),
		cfg("maxUnavailable 99999999999999999999 (beyond int64)", cbr0+"rollout: {maxUnavailable: 99999999999999999999}", "spec.rollout.maxUnavailable"),
		cfg("maxUnavailable 2.5", cbr0+"rollout: {maxUnavailable: 2.5}", "spec.rollout.maxUnavailable"),
		cfg("network name empty", `network: {name: ""}`, `spec.network.name: Invalid value: ""`),
		cfg("network name of 257 characters", "network: {name: "+strings.Repeat("n", 257)+"}", "spec.network.name: Too long"),
		cfg("network name of 100 KB", "network: {name: "+strings.Repeat("n", 100*1024)+"}", "spec.network.name: Too long"),
		cfg("network type Transparent", "network: {name: cbr0, type: Transparent}", `spec.network.type: Unsupported value: "Transparent"`),
		cfg("no spec at all", "{}", "spec.network: Required value"),
		cfg("static source VIP 0.0.0.0", staticVIP("0.0.0.0"), unicast),
		cfg("static source VIP 255.255.255.255", staticVIP("255.255.255.255"), unicast),
		cfg("static source VIP 127.0.0.1", staticVIP("127.0.0.1"), unicast),
		cfg("static source VIP 224.0.0.1", staticVIP("224.0.0.1"), unicast),
		cfg("static source VIP 169.254.0.1", staticVIP("169.254.0.1"), unicast),
		cfg("static source VIP ::1", staticVIP("::1"), ipv4),
		cfg("static source VIP garbage", staticVIP("not-an-ip"), ipv4),
		cfg("static source VIP with a prefix length", staticVIP("10.244.3.9/24"), ipv4),
		cfg("static source VIP IPv6 on overlay", staticVIP("fd00::10"), ipv4),
		cfg("static source VIPs for 1001 nodes", "network: {name: vxlan0, type: Overlay}\noverlay: {sourceVIP: {strategy: Static, static: {addresses: ["+addresses1001.String()+"]}}}", "Too many: 1001: must have at most 1000 items"),
		cfg("feature gate in lower case", cbr0+"featureGates: {winDSR: true}", gateName),
		cfg("feature gate with a dash", cbr0+"featureGates: {Win-DSR: true}", gateName),
		cfg("feature gate with a non-ASCII letter", cbr0+"featureGates: {WinDSRé: true}", gateName),
		cfg("feature gate named empty", cbr0+`featureGates: {"": true}`, gateName),
		cfg("feature gate name of 65 characters", cbr0+"featureGates: {W"+strings.Repeat("x", 64)+": true}", gateName),
		cfg("33 feature gates", cbr0+"featureGates: {"+gates33.String()+"}", "spec.featureGates: Too many: 33: must have at most 32 items"),
		cfg("feature gate set to a string", cbr0+"featureGates: {WinDSR: maybe}", "spec.featureGates.WinDSR: Invalid value", "must be of type boolean"),
		cfg("WinOverlay false on an overlay network", "network: {name: vxlan0, type: Overlay}\noverlay: {sourceVIP: {strategy: Create}}\nfeatureGates: {WinOverlay: false}", "featureGates.WinOverlay cannot be false when network.type is Overlay"),
		cfg("DSR with WinDSR false", cbr0+"dsr: {enabled: true}\nfeatureGates: {WinDSR: false}", "featureGates.WinDSR cannot be false when dsr.enabled is true"),
		cfg("DSR enabled not a boolean", cbr0+"dsr: {enabled: yes please}", "spec.dsr.enabled: Invalid value", "must be of type boolean"),
		cfg("sync period 0", cbr0+"sync: {periodSeconds: 0, minPeriodSeconds: 0}", "spec.sync.periodSeconds: Invalid value: 0"),
		cfg("sync period -1", cbr0+"sync: {periodSeconds: -1, minPeriodSeconds: 0}", "spec.sync.periodSeconds: Invalid value: -1"),
		cfg("sync period 3601", cbr0+"sync: {periodSeconds: 3601}", "spec.sync.periodSeconds: Invalid value: 3601"),
		cfg("sync period 2147483648", cbr0+"sync: {periodSeconds: 2147483648}", "spec.sync.periodSeconds: Invalid value"),
		cfg("sync minPeriod greater than period", cbr0+"sync: {periodSeconds: 5, minPeriodSeconds: 10}", "sync.minPeriodSeconds must not be greater than sync.periodSeconds"),
		cfg("sync minPeriod -1", cbr0+"sync: {minPeriodSeconds: -1}", "spec.sync.minPeriodSeconds: Invalid value: -1"),
		cfg("healthCheck.port 0", cbr0+"healthCheck: {port: 0}", "spec.healthCheck.port: Invalid value: 0"),
		cfg("healthCheck.port -1", cbr0+"healthCheck: {port: -1}", "spec.healthCheck.port: Invalid value: -1"),
		cfg("healthCheck.port 65536", cbr0+"healthCheck: {port: 65536}", "spec.healthCheck.port: Invalid value: 65536"),
		cfg("healthCheck.port 10249 (kube-proxy metrics)", cbr0+"healthCheck: {port: 10249}", busyPort),
		cfg("healthCheck.port 10250 (kubelet)", cbr0+"healthCheck: {port: 10250}", busyPort),
		cfg("healthCheck.port 10265 (agent metrics)", cbr0+"healthCheck: {port: 10265}", busyPort),
		cfg("healthCheck.port 10266 (agent probes)", cbr0+"healthCheck: {port: 10266}", busyPort),
		cfg("progress deadline 1 s", cbr0+"rollout: {progressDeadlineSeconds: 1}", "spec.rollout.progressDeadlineSeconds: Invalid value: 1"),
		cfg("progress deadline over a day", cbr0+"rollout: {progressDeadlineSeconds: 86401}", "spec.rollout.progressDeadlineSeconds: Invalid value: 86401"),
		cfg("paused not a boolean", cbr0+"rollout: {paused: sometimes}", "spec.rollout.paused: Invalid value", "must be of type boolean"),
		cfg("overlay without a source VIP", "network: {name: vxlan0, type: Overlay}", "overlay.sourceVIP is required when network.type is Overlay"),
		cfg("overlay settings on L2Bridge", "network: {name: cbr0, type: L2Bridge}\noverlay: {sourceVIP: {strategy: Create}}", "overlay must not be set when network.type is L2Bridge"),
		cfg("source VIP strategy Guess", "network: {name: vxlan0, type: Overlay}\noverlay: {sourceVIP: {strategy: Guess}}", `spec.overlay.sourceVIP.strategy: Unsupported value: "Guess"`),
		cfg("Endpoint strategy without an endpoint", "network: {name: vxlan0, type: Overlay}\noverlay: {sourceVIP: {strategy: Endpoint}}", "sourceVIP.endpoint is required when strategy is Endpoint and forbidden otherwise"),
		cfg("Create offsetFromEnd 0", "network: {name: vxlan0, type: Overlay}\noverlay: {sourceVIP: {strategy: Create, create: {offsetFromEnd: 0}}}", "spec.overlay.sourceVIP.create.offsetFromEnd: Invalid value: 0"),
		cfg("Create offsetFromEnd 65535", "network: {name: vxlan0, type: Overlay}\noverlay: {sourceVIP: {strategy: Create, create: {offsetFromEnd: 65535}}}", "spec.overlay.sourceVIP.create.offsetFromEnd: Invalid value: 65535"),
		cfg("source-vip node annotation key of 254 characters", "network: {name: vxlan0, type: Overlay}\noverlay: {sourceVIP: {strategy: Static, static: {nodeAnnotation: "+strings.Repeat("a", 254)+"}}}", "spec.overlay.sourceVIP.static.nodeAnnotation: Too long"),
		{
			name: "config: name with capitals and underscores", group: groupAdmission, rejected: []string{"metadata.name: Invalid value", "RFC 1123"},
			send: func(ctx context.Context, x *hostile) error {
				return x.createObject(ctx, "WindowsProxyConfig", "Hx_Bad", cbr0)
			},
		},
	}
}

// nodeProxyAdmissionCases are WindowsProxyNode specs and status patches the apiserver refuses.
func nodeProxyAdmissionCases() []hostileCase {
	wpn := func(name, spec string, want ...string) hostileCase {
		return refusedObject("WindowsProxyNode: "+name, "WindowsProxyNode", spec, want...)
	}
	status := func(name, patch string, want ...string) hostileCase {
		return hostileCase{
			name: "WindowsProxyNode status patch: " + name, group: groupAdmission, rejected: want,
			send: func(ctx context.Context, x *hostile) error { return x.wpnStatusPatch(ctx, patch) },
		}
	}
	var conditions17 []string
	for i := range 17 {
		conditions17 = append(conditions17, fmt.Sprintf(`{"type":"C%d","status":"True","reason":"R","message":"","lastTransitionTime":"2024-01-01T00:00:00Z"}`, i))
	}
	return []hostileCase{
		wpn("hash of 65 characters", "configName: c\nhash: "+strings.Repeat("h", 65)+"\nproxy: {network: {name: cbr0}}", "spec.hash: Too long: may not be more than 64"),
		wpn("without a config name", "hash: abc\nproxy: {network: {name: cbr0}}", "spec.configName: Required value"),
		wpn("without proxy", "configName: c\nhash: abc", "spec.proxy: Required value"),
		wpn("three node IPs", "configName: c\nhash: abc\nproxy: {network: {name: cbr0}, nodeIPs: [10.0.0.1, 10.0.0.2, 10.0.0.3]}", "spec.proxy.nodeIPs: Too many: 3: must have at most 2 items"),
		wpn("source VIP not an IPv4 address", "configName: c\nhash: abc\nproxy: {network: {name: vxlan0, type: Overlay}, sourceVIP: {strategy: Static, address: not-an-ip}}", "sourceVIP.address must be a valid IPv4 address"),
		wpn("network type NAT", "configName: c\nhash: abc\nproxy: {network: {name: cbr0, type: NAT}}", `spec.proxy.network.type: Unsupported value: "NAT"`),
		status("source VIP 999.1.1.1", `{"status":{"sourceVIP":{"address":"999.1.1.1"}}}`, "sourceVIP.address must be an IP address"),
		status("load balancer count 2147483648", `{"status":{"loadBalancers":{"desired":2147483648}}}`, "status.loadBalancers.desired", "2147483648"),
		status("negative failed count", `{"status":{"loadBalancers":{"failed":-1}}}`, "status.loadBalancers.failed: Invalid value: -1"),
		status("IP family IPv5", `{"status":{"ipFamilies":["IPv5"]}}`, `status.ipFamilies[0]: Unsupported value: "IPv5"`),
		status("HNS version thirteen", `{"status":{"hns":{"version":"thirteen"}}}`, "status.hns.version: Invalid value"),
		status("17 conditions", `{"status":{"conditions":[`+strings.Join(conditions17, ",")+`]}}`, "status.conditions: Too many: 17: must have at most 16 items"),
	}
}

// refusedCreate is an object the apiserver must refuse.
func refusedCreate(caseName string, obj client.Object, want ...string) hostileCase {
	return hostileCase{
		name: caseName, group: groupAdmission, rejected: want,
		send: func(ctx context.Context, x *hostile) error {
			return x.c.Create(ctx, obj.DeepCopyObject().(client.Object))
		},
		undo: func(ctx context.Context, x *hostile) error { return x.deleteAll(ctx, obj) },
	}
}

// refusedIngress is a LoadBalancer Service whose load-balancer status the apiserver must refuse.
func refusedIngress(caseName string, ingress corev1.LoadBalancerIngress, want ...string) hostileCase {
	svc := hostileService(objName(caseName), func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer })
	return hostileCase{
		name: caseName, group: groupAdmission, rejected: want,
		send: func(ctx context.Context, x *hostile) error {
			if err := x.c.Create(ctx, svc.DeepCopy()); err != nil {
				return fmt.Errorf("creating the service for the input: %w", err)
			}
			return x.setIngress(ctx, svc, ingress)
		},
		undo: func(ctx context.Context, x *hostile) error { return x.deleteAll(ctx, svc) },
	}
}

// workloadAdmissionCases are Services, EndpointSlices and Nodes the apiserver refuses.
func workloadAdmissionCases() []hostileCase {
	svc := func(name string, mutate func(*corev1.Service), want ...string) hostileCase {
		return refusedCreate("Service: "+name, hostileService(objName("Service: "+name), mutate), want...)
	}
	slice := func(name string, mutate func(*discoveryv1.EndpointSlice), want ...string) hostileCase {
		s := hostileSlice(objName("EndpointSlice: "+name), "no-such-service", "10.244.0.9")
		mutate(s)
		return refusedCreate("EndpointSlice: "+name, s, want...)
	}
	node := func(name string, mutate func(*corev1.Node), want ...string) hostileCase {
		n := fakeNode(objName("Node: "+name), "v1.34.1", nil)
		mutate(n)
		return refusedCreate("Node: "+name, n, want...)
	}
	port := func(p int32) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Spec.Ports[0].Port = p }
	}
	var endpoints1001 []discoveryv1.Endpoint
	for i := range 1001 {
		endpoints1001 = append(endpoints1001, fleet.Endpoint(fleet.Pod{Node: "linux-1", IP: fmt.Sprintf("10.99.%d.%d", i/250, i%250+1)}))
	}
	var ports20001 []discoveryv1.EndpointPort
	for i := range 20001 {
		ports20001 = append(ports20001, discoveryv1.EndpointPort{Name: ptr.To(fmt.Sprintf("p%d", i)), Port: ptr.To(int32(1000 + i%60000))})
	}
	var addresses101 []string
	for i := range 101 {
		addresses101 = append(addresses101, fmt.Sprintf("10.244.0.%d", i+100))
	}
	return []hostileCase{
		svc("ClusterIP without ports", func(s *corev1.Service) { s.Spec.Ports = nil }, "spec.ports: Required value"),
		svc("port 0", port(0), "spec.ports[0].port: Invalid value: 0"),
		svc("port 65536", port(65536), "spec.ports[0].port: Invalid value: 65536"),
		svc("targetPort 65536", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(65536) }, "spec.ports[0].targetPort: Invalid value: 65536"),
		svc("two ports of one name", func(s *corev1.Service) { s.Spec.Ports = append(s.Spec.Ports, s.Spec.Ports[0]) }, "spec.ports[1].name: Duplicate value"),
		svc("protocol ICMP", func(s *corev1.Service) { s.Spec.Ports[0].Protocol = "ICMP" }, `spec.ports[0].protocol: Unsupported value: "ICMP"`),
		svc("ClusterIP outside the service range", func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.10" }, "failed to allocate IP 10.96.0.10"),
		svc("ClusterIP of another Service", func(s *corev1.Service) { s.Spec.ClusterIP = clusterIP(0).String() }, "provided IP is already allocated"),
		svc("ClusterIP garbage", func(s *corev1.Service) { s.Spec.ClusterIP = "banana" }, "spec.clusterIPs[0]: Invalid value"),
		svc("IPv6 family on an IPv4 cluster", func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} }, "spec.ipFamilies[0]: Invalid value", "not configured on this cluster"),
		svc("externalIP 0.0.0.0", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"0.0.0.0"} }, "spec.externalIPs[0]: Invalid value"),
		svc("externalIP 127.0.0.1", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"127.0.0.1"} }, "spec.externalIPs[0]: Invalid value"),
		svc("externalIP garbage", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"banana"} }, "spec.externalIPs[0]: Invalid value"),
		svc("nodePort 1", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports[0].NodePort = 1
		}, "spec.ports[0].nodePort: Invalid value: 1"),
		svc("session affinity timeout 0", func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](0)}}
		}, "spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0"),
		svc("session affinity timeout 86401", func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](86401)}}
		}, "spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 86401"),
		svc("externalTrafficPolicy Local on a ClusterIP service", func(s *corev1.Service) {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}, "spec.externalTrafficPolicy"),
		svc("ExternalName that is no DNS name", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeExternalName
			s.Spec.ExternalName = "not a dns name"
			s.Spec.Ports = nil
		}, "spec.externalName: Invalid value"),
		refusedCreate("Service: name of 64 characters", hostileService(strings.Repeat("s", 64), nil), "must be no more than 63 characters"),
		refusedIngress("Service: load-balancer ingress IP garbage", corev1.LoadBalancerIngress{IP: "banana"}, "status.loadBalancer.ingress[0].ip: Invalid value"),
		refusedIngress("Service: load-balancer ingress ipMode Teleport", corev1.LoadBalancerIngress{IP: "20.0.0.60", IPMode: ptr.To[corev1.LoadBalancerIPMode]("Teleport")}, "status.loadBalancer.ingress[0].ipMode: Unsupported value"),
		slice("garbage address in an IPv4 slice", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"not-an-ip"} }, "endpoints[0].addresses[0]: Invalid value"),
		slice("IPv6 address in an IPv4 slice", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"fd00::9"} }, `endpoints[0].addresses: Invalid value: "fd00::9": must be an IPv4 address`),
		slice("endpoint 127.0.0.1", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"127.0.0.1"} }, "may not be in the loopback range"),
		slice("endpoint 0.0.0.0", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"0.0.0.0"} }, "may not be unspecified"),
		slice("endpoint 224.0.0.1", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"224.0.0.1"} }, "may not be in the link-local multicast range"),
		slice("endpoint 169.254.169.254 (cloud metadata)", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"169.254.169.254"} }, "may not be in the link-local range"),
		slice("1001 endpoints", func(s *discoveryv1.EndpointSlice) { s.Endpoints = endpoints1001 }, "endpoints: Too many: 1001: must have at most 1000 items"),
		slice("20001 ports", func(s *discoveryv1.EndpointSlice) { s.Ports = ports20001 }, "ports: Too many: 20001: must have at most 20000 items"),
		slice("port protocol ICMP", func(s *discoveryv1.EndpointSlice) { s.Ports[0].Protocol = ptr.To[corev1.Protocol]("ICMP") }, `ports[0].protocol: Unsupported value: "ICMP"`),
		slice("address type IPv5", func(s *discoveryv1.EndpointSlice) { s.AddressType = "IPv5" }, `addressType: Unsupported value: "IPv5"`),
		slice("endpoint without an address", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = nil }, "endpoints[0].addresses: Required value"),
		slice("endpoint with 101 addresses", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = addresses101 }, "endpoints[0].addresses: Too many: 101: must have at most 100 items"),
		slice("endpoint nodeName that is no node name", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].NodeName = ptr.To("Bad_Node!") }, "endpoints[0].nodeName: Invalid value"),
		node("source-vip annotation of 300 KB", func(n *corev1.Node) {
			n.Annotations = map[string]string{v1alpha1.SourceVIPAnnotation: strings.Repeat("x", 300*1024)}
		}, "metadata.annotations: Too long"),
		node("pod CIDR garbage", func(n *corev1.Node) { n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.244.x.0/24", []string{"10.244.x.0/24"} }, "spec.podCIDRs[0]: Invalid value"),
	}
}

// --- configs resolved on fake nodes of their own -------------------------------------------

// resolutionCase gives a case a fake Windows node (named like its config) and a config selecting
// it; handled sees what the controller made of them.
func resolutionCase(caseName string, mutateNode func(*corev1.Node), mutateConfig func(*v1alpha1.WindowsProxyConfigSpec), handled func(ctx context.Context, x *hostile, name string) error) hostileCase {
	name := objName(caseName)
	return hostileCase{
		name: caseName, group: groupResolution,
		send: func(ctx context.Context, x *hostile) error {
			n := fakeNode(name, "v1.34.1", nil)
			if mutateNode != nil {
				mutateNode(n)
			}
			if err := x.createNode(ctx, n); err != nil {
				return fmt.Errorf("creating the node of the input: %w", err)
			}
			return x.c.Create(ctx, caseConfig(name, mutateConfig))
		},
		handled: func(ctx context.Context, x *hostile) error { return handled(ctx, x, name) },
		undo: func(ctx context.Context, x *hostile) error {
			if err := x.deleteConfig(ctx, name); err != nil {
				return err
			}
			// The controller deletes the WindowsProxyNode of a config that is gone.
			if err := poll(ctx, settleTimeout, func() error { return x.noWPN(ctx, name) }); err != nil {
				return err
			}
			return x.deleteNode(ctx, name)
		},
	}
}

// annotated is a node with a source-VIP annotation.
func annotated(vip string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Annotations = map[string]string{v1alpha1.SourceVIPAnnotation: vip} }
}

// refused expects the node refused with reason and a message containing want.
func refused(reason, want string) func(context.Context, *hostile, string) error {
	return func(ctx context.Context, x *hostile, name string) error {
		return x.nodeRefused(ctx, name, name, reason, want)
	}
}

// resolved expects the node given a config that passes check.
func resolved(check func(*v1alpha1.WindowsProxyNode) error) func(context.Context, *hostile, string) error {
	return func(ctx context.Context, x *hostile, name string) error {
		return x.nodeResolved(ctx, name, name, check)
	}
}

// stalled expects the config Stalled for reason, with a Warning, and the node without config.
func stalled(reason string) func(context.Context, *hostile, string) error {
	return func(ctx context.Context, x *hostile, name string) error {
		if err := x.configStalled(ctx, name, reason); err != nil {
			return err
		}
		return x.noWPN(ctx, name)
	}
}

// selectsNothing expects the config Ready with nothing selected, and the node without config.
func selectsNothing(ctx context.Context, x *hostile, name string) error {
	cfg, err := x.config(ctx, name)
	if err != nil {
		return err
	}
	if err := atGeneration(cfg); err != nil {
		return err
	}
	if err := wantCondition(cfg.Status.Conditions, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonNoNodesSelected); err != nil {
		return err
	}
	return x.noWPN(ctx, name)
}

func resolutionCases() []hostileCase {
	vip := func(name, value, reason, want string) hostileCase {
		return resolutionCase("node source-vip annotation: "+name, annotated(value), nil, refused(reason, want))
	}
	const unavailable, unusable = v1alpha1.ReasonSourceVIPUnavailable, v1alpha1.ReasonSourceVIPUnusable
	spec := func(name string, mutate func(*v1alpha1.WindowsProxyConfigSpec), check func(*v1alpha1.WindowsProxyNode) error) hostileCase {
		return resolutionCase("config: "+name, annotated("10.244.9.2"), mutate, resolved(check))
	}
	gates := func(name string, g map[string]bool, reason, want string) hostileCase {
		return resolutionCase("config: "+name, annotated("10.244.9.2"), func(s *v1alpha1.WindowsProxyConfigSpec) { s.FeatureGates = g }, refused(reason, want))
	}
	kubelet := func(name, version, reason, want string) hostileCase {
		return resolutionCase("node kubelet version: "+name, func(n *corev1.Node) {
			annotated("10.244.9.2")(n)
			n.Status.NodeInfo.KubeletVersion = version
		}, nil, refused(reason, want))
	}
	selector := func(name string, sel *metav1.LabelSelector, handled func(context.Context, *hostile, string) error) hostileCase {
		return resolutionCase("config nodeSelector: "+name, annotated("10.244.9.2"), func(s *v1alpha1.WindowsProxyConfigSpec) {
			s.NodeSelector = sel
		}, handled)
	}
	mu := func(v intstr.IntOrString) func(*v1alpha1.WindowsProxyConfigSpec) {
		return func(s *v1alpha1.WindowsProxyConfigSpec) { s.Rollout.MaxUnavailable = &v }
	}
	createVIP := func(offset int32) func(*v1alpha1.WindowsProxyConfigSpec) {
		return func(s *v1alpha1.WindowsProxyConfigSpec) {
			s.Overlay.SourceVIP = v1alpha1.SourceVIPSpec{Strategy: v1alpha1.SourceVIPStrategyCreate, Create: &v1alpha1.SourceVIPCreate{OffsetFromEnd: offset}}
		}
	}
	podCIDR := func(cidr string) func(*corev1.Node) {
		return func(n *corev1.Node) { n.Spec.PodCIDR, n.Spec.PodCIDRs = cidr, []string{cidr} }
	}
	hugeSelector := map[string]string{}
	for i := range 3000 {
		hugeSelector[fmt.Sprintf("label-%d", i)] = "x"
	}
	name256 := strings.Repeat("n", 256)
	unicodeName := "网络-🚀-réseau"
	wantNetwork := func(name string) func(*v1alpha1.WindowsProxyNode) error {
		return func(w *v1alpha1.WindowsProxyNode) error {
			if w.Spec.Proxy.Network.Name != name {
				return fmt.Errorf("network %q, want %q", clipText(w.Spec.Proxy.Network.Name, 40), clipText(name, 40))
			}
			return nil
		}
	}
	wantVIP := func(addr string) func(*v1alpha1.WindowsProxyNode) error {
		return func(w *v1alpha1.WindowsProxyNode) error {
			if w.Spec.Proxy.SourceVIP == nil || w.Spec.Proxy.SourceVIP.Address != addr {
				return fmt.Errorf("source VIP %+v, want %s", w.Spec.Proxy.SourceVIP, addr)
			}
			return nil
		}
	}
	const listWins = "config: static address list wins over a garbage annotation"
	// The controller reads no Pods: whether a pod holds the address is the node's agent to say
	// (hostile_solo_test.go, "static source VIP of a pod"); this node has none.
	podCase := withPod(resolutionCase("node source-vip annotation: a pod's IP", annotated("10.244.9.7"), nil,
		resolved(wantVIP("10.244.9.7"))), hostileNamespace, "hx-vip-holder", "10.244.9.7")
	return []hostileCase{
		vip("40 KB", strings.Repeat("x", 40*1024), unavailable, "(40960 bytes)"),
		vip("garbage", "not-an-ip", unavailable, `source VIP "not-an-ip"`),
		vip("empty", "", unavailable, "node has no source VIP"),
		vip("multicast 224.0.0.1", "224.0.0.1", unusable, "is a multicast address"),
		vip("0.0.0.0", "0.0.0.0", unusable, "is the unspecified address"),
		vip("255.255.255.255", "255.255.255.255", unusable, "is the broadcast address"),
		vip("127.0.0.1", "127.0.0.1", unusable, "is a loopback address"),
		vip("link-local 169.254.1.1", "169.254.1.1", unusable, "is a link-local address"),
		vip("IPv6 fd00::1", "fd00::1", unavailable, "is not an IPv4 address"),
		vip("IPv4-mapped IPv6", "::ffff:10.244.9.9", unavailable, "is not an IPv4 address"),
		vip("leading zeros", "010.244.009.009", unavailable, "is not an IPv4 address"),
		vip("leading space", " 10.244.9.9", unavailable, "is not an IPv4 address"),
		vip("with a prefix length", "10.244.9.9/24", unavailable, "is not an IPv4 address"),
		vip("a Service's ClusterIP", clusterIP(0).String(), unusable, "is already held by the ClusterIP of Service chaos/svc-000"),
		podCase,
		resolutionCase(listWins, annotated("garbage"), func(s *v1alpha1.WindowsProxyConfigSpec) {
			s.Overlay.SourceVIP.Static.Addresses = []v1alpha1.NodeAddress{{NodeName: objName(listWins), Address: "10.244.9.3"}}
		}, resolved(wantVIP("10.244.9.3"))),
		resolutionCase("config: source-vip annotation key no node has", annotated("10.244.9.2"), func(s *v1alpha1.WindowsProxyConfigSpec) {
			s.Overlay.SourceVIP.Static.NodeAnnotation = "example.com/nowhere"
		}, refused(unavailable, "node annotation example.com/nowhere")),
		resolutionCase("config: Create strategy offset beyond the pod CIDR", podCIDR("10.250.1.0/24"), createVIP(65534), refused(unavailable, "does not fit in the node's pod CIDR")),
		resolutionCase("config: Create strategy on a node without pod CIDR", nil, createVIP(1), refused(unavailable, "no IPv4 pod CIDR")),
		resolutionCase("config: Create strategy on an IPv6-only node", podCIDR("fd00:250::/64"), createVIP(1), refused(unavailable, "no IPv4 pod CIDR")),
		gates("unknown feature gate", map[string]bool{"NoSuchGate": true}, v1alpha1.ReasonUnknownFeatureGate, "NoSuchGate"),
		gates("WinDSR false, locked on 1.34", map[string]bool{"WinDSR": false}, v1alpha1.ReasonFeatureGateLocked, "WinDSR"),
		gates("32 unknown feature gates", func() map[string]bool {
			m := map[string]bool{}
			for i := range 32 {
				m[fmt.Sprintf("Gate%02d", i)] = i%2 == 0
			}
			return m
		}(), v1alpha1.ReasonUnknownFeatureGate, "Gate00"),
		spec("WinDSR and WinOverlay true, locked at their defaults", func(s *v1alpha1.WindowsProxyConfigSpec) {
			s.FeatureGates = map[string]bool{"WinDSR": true, "WinOverlay": true}
		}, nil),
		resolutionCase("config: DSR on a 1.32 node without WinDSR", func(n *corev1.Node) {
			annotated("10.244.9.2")(n)
			n.Status.NodeInfo.KubeletVersion = "v1.32.4"
		}, func(s *v1alpha1.WindowsProxyConfigSpec) { s.DSR.Enabled = true }, refused(v1alpha1.ReasonFeatureGateDisabled, "WinDSR feature gate not enabled")),
		spec("DSR on overlay, WinDSR left out on 1.34", func(s *v1alpha1.WindowsProxyConfigSpec) { s.DSR.Enabled = true }, func(w *v1alpha1.WindowsProxyNode) error {
			if !w.Spec.Proxy.EnableDSR {
				return errors.New("DSR not enabled")
			}
			return nil
		}),
		kubelet("garbage", "banana", v1alpha1.ReasonInvalidNodeVersion, `kubelet version "banana"`),
		kubelet("40 KB", "v1."+strings.Repeat("9", 40*1024), v1alpha1.ReasonInvalidNodeVersion, "(40963 bytes)"),
		kubelet("v2.0.0", "v2.0.0", v1alpha1.ReasonInvalidNodeVersion, "unsupported major version 2"),
		kubelet("v1.10.0, before the WinOverlay gate", "v1.10.0", v1alpha1.ReasonFeatureGateDisabled, "Kubernetes 1.10 has no WinOverlay gate"),
		resolutionCase("node kubelet version: v1.99.0, a future release", func(n *corev1.Node) {
			annotated("10.244.9.2")(n)
			n.Status.NodeInfo.KubeletVersion = "v1.99.0"
		}, nil, resolved(nil)),
		spec("maxUnavailable 100%", mu(intstr.FromString("100%")), nil),
		spec("maxUnavailable 1%", mu(intstr.FromString("1%")), nil),
		spec("maxUnavailable 2147483647", mu(intstr.FromInt32(2147483647)), nil),
		spec("network name in Chinese with an emoji", func(s *v1alpha1.WindowsProxyConfigSpec) { s.Network.Name = unicodeName }, wantNetwork(unicodeName)),
		spec("network name of 256 characters", func(s *v1alpha1.WindowsProxyConfigSpec) { s.Network.Name = name256 }, wantNetwork(name256)),
		spec("sync period and minPeriod 3600", func(s *v1alpha1.WindowsProxyConfigSpec) {
			s.Sync = v1alpha1.SyncSpec{PeriodSeconds: 3600, MinPeriodSeconds: 3600}
		}, nil),
		spec("sync period 1, minPeriod 0", func(s *v1alpha1.WindowsProxyConfigSpec) {
			s.Sync = v1alpha1.SyncSpec{PeriodSeconds: 1, MinPeriodSeconds: 0}
		}, nil),
		spec("healthCheck.port 1", func(s *v1alpha1.WindowsProxyConfigSpec) { s.HealthCheck.Port = 1 }, nil),
		spec("healthCheck.port 65535", func(s *v1alpha1.WindowsProxyConfigSpec) { s.HealthCheck.Port = 65535 }, nil),
		spec("dual-stack on overlay", func(s *v1alpha1.WindowsProxyConfigSpec) { s.DualStack.Enabled = true }, nil),
		spec("progress deadline a day", func(s *v1alpha1.WindowsProxyConfigSpec) { s.Rollout.ProgressDeadlineSeconds = 86400 }, nil),
		selector("invalid operator", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: caseLabel, Operator: "Like", Values: []string{"x"}}}}, stalled(v1alpha1.ReasonInvalidNodeSelector)),
		selector("label value with a space", &metav1.LabelSelector{MatchLabels: map[string]string{caseLabel: "a b"}}, stalled(v1alpha1.ReasonInvalidNodeSelector)),
		selector("label key that is no label key", &metav1.LabelSelector{MatchLabels: map[string]string{"-bad-": "x"}}, stalled(v1alpha1.ReasonInvalidNodeSelector)),
		selector("In without values", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: caseLabel, Operator: metav1.LabelSelectorOpIn}}}, stalled(v1alpha1.ReasonInvalidNodeSelector)),
		selector("3000 labels", &metav1.LabelSelector{MatchLabels: hugeSelector}, selectsNothing),
		resolutionCase("node: os label Windows with a capital", func(n *corev1.Node) {
			annotated("10.244.9.2")(n)
			n.Labels[v1alpha1.OSLabel] = "Windows"
		}, nil, selectsNothing),
		resolutionCase("node: a Linux node the config's selector matches", func(n *corev1.Node) {
			annotated("10.244.9.2")(n)
			n.Labels[v1alpha1.OSLabel] = "linux"
		}, nil, selectsNothing),
		unknownFieldCase(),
	}
}

// unknownFieldCase sends a config with a field the CRD does not know: the apiserver drops it
// (the structural schema prunes it) and the rest of the config works.
func unknownFieldCase() hostileCase {
	const caseName = "config: unknown spec field"
	name := objName(caseName)
	c := resolutionCase(caseName, nil, nil, nil)
	c.send = func(ctx context.Context, x *hostile) error {
		n := fakeNode(name, "v1.34.1", nil)
		annotated("10.244.9.2")(n)
		if err := x.createNode(ctx, n); err != nil {
			return err
		}
		spec := fmt.Sprintf("nodeSelector: {matchLabels: {%q: %q}}\nnetwork: {name: Calico, type: Overlay}\noverlay: {sourceVIP: {strategy: Static, static: {}}}\nproxyEverything: true\nrollout: {maxUnavailable: 1, speed: ludicrous}", caseLabel, name)
		return x.createObject(ctx, "WindowsProxyConfig", name, spec)
	}
	c.handled = func(ctx context.Context, x *hostile) error {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(v1alpha1.GroupVersion.String())
		u.SetKind("WindowsProxyConfig")
		if err := x.c.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
			return err
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "proxyEverything"); found {
			return errors.New("the unknown field was stored")
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "rollout", "speed"); found {
			return errors.New("the unknown nested field was stored")
		}
		return x.nodeResolved(ctx, name, name, nil)
	}
	return c
}

// withPod runs a Pod with ip during the case, as the address's holder.
func withPod(c hostileCase, namespace, name, ip string) hostileCase {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
	}
	send, undo := c.send, c.undo
	c.send = func(ctx context.Context, x *hostile) error {
		p := pod.DeepCopy()
		if err := x.c.Create(ctx, p); err != nil {
			return fmt.Errorf("creating the pod holding the address: %w", err)
		}
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}
		if err := x.c.Status().Update(ctx, p); err != nil {
			return fmt.Errorf("setting the pod's IP: %w", err)
		}
		return send(ctx, x)
	}
	c.undo = func(ctx context.Context, x *hostile) error {
		return errors.Join(undo(ctx, x), x.deleteAll(ctx, pod))
	}
	return c
}

// --- Services and EndpointSlices -----------------------------------------------------------

// workload is a Service with its EndpointSlices: created by send, deleted by undo; check sees the
// created Service (with its ClusterIP).
func workload(caseName string, svc *corev1.Service, slices []*discoveryv1.EndpointSlice, check func(x *hostile, svc *corev1.Service) error) hostileCase {
	var created *corev1.Service
	return hostileCase{
		name: caseName, group: groupWorkloads,
		send: func(ctx context.Context, x *hostile) error {
			if svc != nil {
				created = svc.DeepCopy()
				if err := x.c.Create(ctx, created); err != nil {
					return err
				}
			}
			for _, s := range slices {
				if err := x.c.Create(ctx, s.DeepCopy()); err != nil {
					return err
				}
			}
			return nil
		},
		handled: func(ctx context.Context, x *hostile) error { return check(x, created) },
		undo: func(ctx context.Context, x *hostile) error {
			var objs []client.Object
			if svc != nil {
				objs = append(objs, svc)
			}
			for _, s := range slices {
				objs = append(objs, s)
			}
			return x.deleteAll(ctx, objs...)
		},
	}
}

// served is a Service with one slice of ready endpoints at ips on linux-1 (remote for win-2025).
func served(caseName string, mutate func(*corev1.Service), mutateSlice func(*discoveryv1.EndpointSlice), check func(x *hostile, svc *corev1.Service) error, ips ...string) hostileCase {
	name := objName(caseName)
	s := hostileSlice(name, name, ips...)
	if mutateSlice != nil {
		mutateSlice(s)
	}
	return workload(caseName, hostileService(name, mutate), []*discoveryv1.EndpointSlice{s}, check)
}

// oneLB expects one load balancer on the ClusterIP with exactly backends.
func oneLB(backends ...string) func(*hostile, *corev1.Service) error {
	return func(x *hostile, svc *corev1.Service) error { return x.wantLBs(svc.Spec.ClusterIP, 1, backends...) }
}

// noLB expects no load balancer on the ClusterIP.
func noLB(x *hostile, svc *corev1.Service) error { return x.wantLBs(svc.Spec.ClusterIP, 0) }

// lbWith expects one load balancer on the ClusterIP for which check passes.
func lbWith(check func(hns.LoadBalancer) error) func(*hostile, *corev1.Service) error {
	return func(x *hostile, svc *corev1.Service) error {
		_, lbs, err := x.lbsOf(svc.Spec.ClusterIP)
		if err != nil {
			return err
		}
		if len(lbs) != 1 {
			return fmt.Errorf("%s is the frontend of %d load balancers, want 1", svc.Spec.ClusterIP, len(lbs))
		}
		return check(lbs[0])
	}
}

// internalPort expects one load balancer on the ClusterIP whose backends listen on port.
func internalPort(port uint16) func(*hostile, *corev1.Service) error {
	return lbWith(func(lb hns.LoadBalancer) error {
		if lb.PortMapping.InternalPort != port {
			return fmt.Errorf("internal port %d, want %d", lb.PortMapping.InternalPort, port)
		}
		return nil
	})
}

// andFrontend also expects n load balancers on another frontend IP (an external or ingress IP).
func andFrontend(ip string, n int, check func(*hostile, *corev1.Service) error) func(*hostile, *corev1.Service) error {
	return func(x *hostile, svc *corev1.Service) error {
		if err := check(x, svc); err != nil {
			return err
		}
		return x.wantLBs(ip, n)
	}
}

// withIngress makes a workload a LoadBalancer Service with load-balancer status ingress.
func withIngress(c hostileCase, ingress corev1.LoadBalancerIngress) hostileCase {
	send := c.send
	c.send = func(ctx context.Context, x *hostile) error {
		if err := send(ctx, x); err != nil {
			return err
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: hostileNamespace, Name: objName(c.name)}}
		return x.setIngress(ctx, svc, ingress)
	}
	return c
}

func loadBalancer(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer }

func annotate(key, value string) func(*corev1.Service) {
	return func(s *corev1.Service) { s.Annotations = map[string]string{key: value} }
}

func workloadCases() []hostileCase {
	var ports100 []corev1.ServicePort
	var slicePorts100 []discoveryv1.EndpointPort
	for i := range 100 {
		name := fmt.Sprintf("p%d", i)
		ports100 = append(ports100, corev1.ServicePort{Name: name, Protocol: corev1.ProtocolTCP, Port: int32(1000 + i), TargetPort: intstr.FromInt32(int32(8000 + i))})
		slicePorts100 = append(slicePorts100, discoveryv1.EndpointPort{Name: ptr.To(name), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(int32(8000 + i))})
	}
	var ips1000 []string
	for i := range 1000 {
		ips1000 = append(ips1000, fmt.Sprintf("10.99.%d.%d", i/250, i%250+1))
	}
	big := strings.Repeat("x", 100*1024)
	conditions := func(ready, serving, terminating *bool) func(*discoveryv1.EndpointSlice) {
		return func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Conditions = discoveryv1.EndpointConditions{Ready: ready, Serving: serving, Terminating: terminating}
		}
	}
	// sliceOnly is an EndpointSlice without its Service: nothing may be programmed for it.
	sliceOnly := func(caseName string, mutate func(*discoveryv1.EndpointSlice), ip string) hostileCase {
		name := objName(caseName)
		s := hostileSlice(name, name, ip)
		mutate(s)
		return workload(caseName, nil, []*discoveryv1.EndpointSlice{s}, func(x *hostile, _ *corev1.Service) error { return x.noEndpoint(ip) })
	}
	withDistribution := func(want hns.DistributionType) func(hns.LoadBalancer) error {
		return func(lb hns.LoadBalancer) error {
			if lb.PortMapping.DistributionType != want {
				return fmt.Errorf("distribution %d, want %d", lb.PortMapping.DistributionType, want)
			}
			return nil
		}
	}
	unlabelled := func() hostileCase {
		const caseName = "EndpointSlice: without the service-name label"
		name := objName(caseName)
		s := hostileSlice(name, name, "10.244.0.40")
		s.Labels = nil
		return workload(caseName, hostileService(name, nil), []*discoveryv1.EndpointSlice{s}, func(x *hostile, svc *corev1.Service) error {
			return errors.Join(noLB(x, svc), x.noEndpoint("10.244.0.40"))
		})
	}
	return []hostileCase{
		served("Service: 100 ports", func(s *corev1.Service) { s.Spec.Ports = ports100 }, func(s *discoveryv1.EndpointSlice) { s.Ports = slicePorts100 },
			func(x *hostile, svc *corev1.Service) error { return x.wantLBs(svc.Spec.ClusterIP, 100, "10.244.0.10") }, "10.244.0.10"),
		served("Service: SCTP port", func(s *corev1.Service) { s.Spec.Ports[0].Protocol = corev1.ProtocolSCTP }, func(s *discoveryv1.EndpointSlice) {
			s.Ports[0].Protocol = ptr.To(corev1.ProtocolSCTP)
		}, lbWith(func(lb hns.LoadBalancer) error {
			if lb.PortMapping.Protocol != hns.ProtocolSCTP {
				return fmt.Errorf("protocol %d, want SCTP", lb.PortMapping.Protocol)
			}
			return nil
		}), "10.244.0.11"),
		served("Service: SCTP port, TCP endpoints", func(s *corev1.Service) { s.Spec.Ports[0].Protocol = corev1.ProtocolSCTP }, nil, noLB, "10.244.0.12"),
		served("Service: externalIP 20.0.0.50", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"20.0.0.50"} }, nil,
			andFrontend("20.0.0.50", 1, oneLB("10.244.0.13")), "10.244.0.13"),
		withIngress(served("Service: load-balancer ingress ipMode Proxy", loadBalancer, nil, andFrontend("20.0.0.51", 0, oneLB("10.244.0.14")), "10.244.0.14"),
			corev1.LoadBalancerIngress{IP: "20.0.0.51", IPMode: ptr.To(corev1.LoadBalancerIPModeProxy)}),
		withIngress(served("Service: load-balancer ingress with a hostname only", loadBalancer, nil, oneLB("10.244.0.15"), "10.244.0.15"),
			corev1.LoadBalancerIngress{Hostname: "lb.example.com"}),
		withIngress(served("Service: load-balancer ingress equal to the ClusterIP of another Service", loadBalancer, nil, func(x *hostile, svc *corev1.Service) error {
			// The frontend stays with the model's Service: a ClusterIP wins over an ingress IP.
			return errors.Join(x.wantLBs(svc.Spec.ClusterIP, 1, "10.244.0.16"),
				x.wantLBs(clusterIP(1).String(), 1, append([]string{localPod(1).String()}, addrStrings(remotePod(1, 0), remotePod(1, 1))...)...))
		}, "10.244.0.16"), corev1.LoadBalancerIngress{IP: clusterIP(1).String()}),
		served("Service: session affinity for a day", func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](86400)}}
		}, nil, lbWith(withDistribution(hns.DistributionSourceIP)), "10.244.0.17"),
		served("Service: session affinity for 1 s", func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](1)}}
		}, nil, lbWith(withDistribution(hns.DistributionSourceIP)), "10.244.0.18"),
		withIngress(served("Service: preserve-destination TRUE in capitals", func(s *corev1.Service) {
			loadBalancer(s)
			annotate("preserve-destination", "TRUE")(s)
		}, nil, andFrontend("20.0.0.52", 1, oneLB("10.244.0.19")), "10.244.0.19"), corev1.LoadBalancerIngress{IP: "20.0.0.52"}),
		withIngress(served("Service: preserve-destination of 100 KB", func(s *corev1.Service) {
			loadBalancer(s)
			annotate("preserve-destination", big)(s)
		}, nil, andFrontend("20.0.0.53", 1, oneLB("10.244.0.20")), "10.244.0.20"), corev1.LoadBalancerIngress{IP: "20.0.0.53"}),
		served("Service: winProxyOptimization DISABLED", annotate("winProxyOptimization", "DISABLED"), nil, oneLB("10.244.0.21"), "10.244.0.21"),
		served("Service: winProxyOptimization garbage", annotate("winProxyOptimization", "\x00\u202e☃"), nil, oneLB("10.244.0.22"), "10.244.0.22"),
		served("Service: ExternalName with endpoints", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeExternalName
			s.Spec.ExternalName = "example.com"
		}, nil, func(x *hostile, _ *corev1.Service) error { return x.noEndpoint("10.244.0.23") }, "10.244.0.23"),
		served("Service: headless with endpoints", func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone },
			nil, func(x *hostile, _ *corev1.Service) error { return x.noEndpoint("10.244.0.24") }, "10.244.0.24"),
		served("Service: service-proxy-name label", func(s *corev1.Service) {
			s.Labels = map[string]string{"service.kubernetes.io/service-proxy-name": "someone-else"}
		}, nil, func(x *hostile, svc *corev1.Service) error {
			return errors.Join(noLB(x, svc), x.noEndpoint("10.244.0.25"))
		}, "10.244.0.25"),
		served("Service: internalTrafficPolicy Local, no local endpoint", func(s *corev1.Service) {
			s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
		}, nil, noLB, "10.244.0.26"),
		served("Service: named targetPort no endpoint port matches", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("nope") },
			func(s *discoveryv1.EndpointSlice) { s.Ports[0].Name = ptr.To("other") }, noLB, "10.244.0.27"),
		served("EndpointSlice: FQDN address type", nil, func(s *discoveryv1.EndpointSlice) {
			s.AddressType = discoveryv1.AddressTypeFQDN
			s.Endpoints[0].Addresses = []string{"pod.example.com"}
		}, noLB, "10.244.0.35"),
		served("EndpointSlice: endpoint on a node that does not exist", nil, func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].NodeName = ptr.To("ghost-node")
		}, oneLB("10.244.0.28"), "10.244.0.28"),
		served("EndpointSlice: one IP listed twice", nil, nil, oneLB("10.244.0.29"), "10.244.0.29", "10.244.0.29"),
		served("EndpointSlice: 1000 endpoints", nil, nil, oneLB(ips1000...), ips1000...),
		// kube-proxy ignores an endpoint port 0 (pkg/proxy/endpointslicecache.go): no endpoint, no load balancer.
		served("EndpointSlice: port 0", nil, func(s *discoveryv1.EndpointSlice) { s.Ports[0].Port = ptr.To[int32](0) }, noLB, "10.244.0.30"),
		// The apiserver does not bound an EndpointSlice's port; kube-proxy's winkernel narrows it
		// to 16 bits (proxier.go, uint16(baseInfo.Port())), so 65536 becomes 0 and -1 becomes 65535.
		served("EndpointSlice: port 65536", nil, func(s *discoveryv1.EndpointSlice) { s.Ports[0].Port = ptr.To[int32](65536) }, internalPort(0), "10.244.0.37"),
		served("EndpointSlice: port -1", nil, func(s *discoveryv1.EndpointSlice) { s.Ports[0].Port = ptr.To[int32](-1) }, internalPort(65535), "10.244.0.38"),
		served("EndpointSlice: endpoint with two addresses", nil, func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Addresses = []string{"10.244.0.39", "10.244.0.44"}
		}, func(x *hostile, svc *corev1.Service) error {
			// Only the first address counts, as for kube-proxy.
			return errors.Join(oneLB("10.244.0.39")(x, svc), x.noEndpoint("10.244.0.44"))
		}, "10.244.0.39"),
		served("EndpointSlice: port without a number", nil, func(s *discoveryv1.EndpointSlice) { s.Ports[0].Port = nil }, noLB, "10.244.0.31"),
		served("EndpointSlice: conditions all nil", nil, conditions(nil, nil, nil), oneLB("10.244.0.32"), "10.244.0.32"),
		served("EndpointSlice: ready yet not serving and terminating", nil, conditions(ptr.To(true), ptr.To(false), ptr.To(true)), noLB, "10.244.0.33"),
		served("EndpointSlice: not ready, serving, not terminating", nil, conditions(ptr.To(false), ptr.To(true), ptr.To(false)), noLB, "10.244.0.34"),
		served("EndpointSlice: endpoint at another Service's ClusterIP", nil, nil, oneLB(clusterIP(2).String()), clusterIP(2).String()),
		served("EndpointSlice: endpoint at the node's source VIP", nil, func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].NodeName = ptr.To(node.Name)
		}, oneLB(node.SourceVIP().String()), node.SourceVIP().String()),
		served("EndpointSlice: local endpoint HNS does not have", nil, func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].NodeName = ptr.To(node.Name)
		}, noLB, "10.244.3.250"),
		// The apiserver lets the broadcast address through; kube-proxy programs it like any backend.
		served("EndpointSlice: endpoint 255.255.255.255", nil, nil, oneLB("255.255.255.255"), "255.255.255.255"),
		served("EndpointSlice: IPv6 slice for an IPv4 Service", nil, func(s *discoveryv1.EndpointSlice) {
			s.AddressType = discoveryv1.AddressTypeIPv6
			s.Endpoints[0].Addresses = []string{"fd00::35"}
		}, noLB, "10.244.0.36"),
		unlabelled(),
		sliceOnly("EndpointSlice: of a Service that does not exist", func(*discoveryv1.EndpointSlice) {}, "10.244.0.41"),
		sliceOnly("EndpointSlice: of a Service that does not exist, on this node", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].NodeName = ptr.To(node.Name)
		}, "10.244.0.42"),
		sliceOnly("EndpointSlice: of a headless-labelled Service", func(s *discoveryv1.EndpointSlice) {
			s.Labels[corev1.IsHeadlessService] = ""
		}, "10.244.0.43"),
		nodeWorkload("Node: another node claims win-2025's pod CIDR", func(n *corev1.Node) {
			n.Labels[v1alpha1.OSLabel] = "linux"
			n.Spec.PodCIDR, n.Spec.PodCIDRs = node.PodCIDR, []string{node.PodCIDR}
		}, func(n *corev1.Node) {
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "172.20.0.99"}}
		}),
		nodeWorkload("Node: internal IP equal to win-2025's", nil, func(n *corev1.Node) {
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: node.IP}}
		}),
		nodeWorkload("Node: internal IP garbage", nil, func(n *corev1.Node) {
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "banana"}}
		}),
	}
}

func addrStrings(addrs ...netip.Addr) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out
}

// nodeWorkload creates a node (not selected by any config) with odd data, which the agent reads
// as one of the cluster's nodes.
func nodeWorkload(caseName string, mutate, mutateStatus func(*corev1.Node)) hostileCase {
	name := objName(caseName)
	return hostileCase{
		name: caseName, group: groupWorkloads,
		send: func(ctx context.Context, x *hostile) error {
			n := fakeNode(name, "v1.34.1", nil)
			n.Labels[caseLabel] = "none"
			if mutate != nil {
				mutate(n)
			}
			if mutateStatus != nil {
				mutateStatus(n)
			}
			return x.createNode(ctx, n)
		},
		// The agent programs on: intact() after the batch checks it.
		handled: func(context.Context, *hostile) error { return nil },
		undo:    func(ctx context.Context, x *hostile) error { return x.deleteNode(ctx, name) },
	}
}

// sentinel creates a Service after a batch's workloads and waits for its load balancer.
func (x *hostile) sentinel(ctx context.Context) error {
	svc := hostileService("hx-sentinel", nil)
	if err := x.c.Create(ctx, svc); err != nil {
		return err
	}
	if err := x.c.Create(ctx, hostileSlice("hx-sentinel", "hx-sentinel", "10.244.0.254")); err != nil {
		return err
	}
	return poll(ctx, handleTimeout, func() error { return x.wantLBs(svc.Spec.ClusterIP, 1, "10.244.0.254") })
}

func (x *hostile) deleteSentinel(ctx context.Context) error {
	return x.deleteAll(ctx, hostileService("hx-sentinel", nil), hostileSlice("hx-sentinel", "hx-sentinel"))
}
