//go:build !windows

package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/testenv"
)

// These tests send WindowsProxyConfig and WindowsProxyNode objects to a real kube-apiserver with
// winproxy's CRDs and check what a user sees: the defaults on read-back, or the exact message of the
// rejection. They prove that the OpenAPI bounds, enums and CEL rules in the CRDs do what the Go
// markers say.

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// admissionCase is one object sent to the apiserver.
type admissionCase struct {
	name string
	// kind is WindowsProxyConfig or WindowsProxyNode.
	kind string
	// spec is the object's spec, in YAML.
	spec string
	// wantErr holds substrings of the rejection message; empty means the object must be accepted.
	wantErr []string
	// wantSpec, for accepted objects, is the spec read back (YAML), defaults included.
	wantSpec string
}

const minimalDefaults = `
network: {name: cbr0, type: Auto}
dsr: {enabled: false}
dualStack: {enabled: false}
healthCheck: {forwardVIP: false, rootEndpointName: cbr0, port: 10256}
sync: {periodSeconds: 30, minPeriodSeconds: 1}
rollout: {maxUnavailable: 1, paused: false, progressDeadlineSeconds: 300, autoRollback: false}
topologyAwareRouting: true
`

func wpcCases() []admissionCase {
	overlay := func(sourceVIP string) string {
		return "network: {name: vxlan0, type: Overlay}\noverlay:\n  sourceVIP: " + sourceVIP
	}
	return []admissionCase{
		{name: "minimal config gets every default", spec: `network: {name: cbr0}`, wantSpec: minimalDefaults},
		{name: "calico overlay with endpoint source VIP and DSR", spec: `
network: {name: Calico, type: Overlay}
dsr: {enabled: true}
overlay: {sourceVIP: {strategy: Endpoint, endpoint: {name: Calico_ep}}}
dualStack: {enabled: true}`, wantSpec: `
network: {name: Calico, type: Overlay}
dsr: {enabled: true}
overlay: {sourceVIP: {strategy: Endpoint, endpoint: {name: Calico_ep}}}
dualStack: {enabled: true}
healthCheck: {forwardVIP: false, rootEndpointName: cbr0, port: 10256}
sync: {periodSeconds: 30, minPeriodSeconds: 1}
rollout: {maxUnavailable: 1, paused: false, progressDeadlineSeconds: 300, autoRollback: false}
topologyAwareRouting: true`},
		{name: "create strategy without parameters is accepted", spec: overlay(`{strategy: Create}`)},
		{name: "create strategy defaults offsetFromEnd to 1", spec: overlay(`{strategy: Create, create: {}}`), wantSpec: overlay(`{strategy: Create, create: {offsetFromEnd: 1}}`) + `
dsr: {enabled: false}
dualStack: {enabled: false}
healthCheck: {forwardVIP: false, rootEndpointName: cbr0, port: 10256}
sync: {periodSeconds: 30, minPeriodSeconds: 1}
rollout: {maxUnavailable: 1, paused: false, progressDeadlineSeconds: 300, autoRollback: false}
topologyAwareRouting: true`},
		{name: "static strategy defaults the node annotation", spec: overlay(`{strategy: Static, static: {addresses: [{nodeName: win-1, address: 10.244.1.2}]}}`), wantSpec: overlay(`{strategy: Static, static: {nodeAnnotation: winproxy.io/source-vip, addresses: [{nodeName: win-1, address: 10.244.1.2}]}}`) + `
dsr: {enabled: false}
dualStack: {enabled: false}
healthCheck: {forwardVIP: false, rootEndpointName: cbr0, port: 10256}
sync: {periodSeconds: 30, minPeriodSeconds: 1}
rollout: {maxUnavailable: 1, paused: false, progressDeadlineSeconds: 300, autoRollback: false}
topologyAwareRouting: true`},
		{name: "percent maxUnavailable is accepted", spec: "network: {name: cbr0}\nrollout: {maxUnavailable: 25%}"},
		{name: "100 percent maxUnavailable is accepted", spec: "network: {name: cbr0}\nrollout: {maxUnavailable: 100%}"},
		{name: "known feature gates are accepted", spec: "network: {name: cbr0}\nfeatureGates: {WinDSR: true, WinOverlay: true, AllowServiceExternalIPs: false}"},
		{name: "minPeriod equal to period is accepted", spec: "network: {name: cbr0}\nsync: {periodSeconds: 5, minPeriodSeconds: 5}"},
		{name: "minPeriod zero is accepted", spec: "network: {name: cbr0}\nsync: {periodSeconds: 5, minPeriodSeconds: 0}"},
		{name: "node selector is accepted", spec: "network: {name: cbr0}\nnodeSelector: {matchLabels: {pool: win}}"},
		{name: "topologyAwareRouting false is kept", spec: "network: {name: cbr0}\ntopologyAwareRouting: false", wantSpec: strings.Replace(minimalDefaults, "topologyAwareRouting: true", "topologyAwareRouting: false", 1)},

		{name: "network is required", spec: `dsr: {enabled: true}`, wantErr: []string{`spec.network: Required value`}},
		{name: "network name is required", spec: `network: {type: L2Bridge}`, wantErr: []string{`spec.network.name: Required value`}},
		{name: "empty network name", spec: `network: {name: ""}`, wantErr: []string{`spec.network.name: Invalid value: ""`, `at least 1 chars long`}},
		{name: "network name too long", spec: `network: {name: ` + strings.Repeat("n", 257) + `}`, wantErr: []string{`spec.network.name: Too long: may not be more than 256`}},
		{name: "unknown network type", spec: `network: {name: cbr0, type: Transparent}`, wantErr: []string{`spec.network.type: Unsupported value: "Transparent"`, `"Auto", "L2Bridge", "Overlay"`}},
		{name: "overlay without source VIP", spec: `network: {name: vxlan0, type: Overlay}`, wantErr: []string{`overlay.sourceVIP is required when network.type is Overlay`}},
		{name: "overlay on L2Bridge", spec: "network: {name: cbr0, type: L2Bridge}\noverlay: {sourceVIP: {strategy: Create}}", wantErr: []string{`overlay must not be set when network.type is L2Bridge`}},
		{name: "unknown source VIP strategy", spec: overlay(`{strategy: Guess}`), wantErr: []string{`spec.overlay.sourceVIP.strategy: Unsupported value: "Guess"`}},
		{name: "endpoint strategy without endpoint", spec: overlay(`{strategy: Endpoint}`), wantErr: []string{`sourceVIP.endpoint is required when strategy is Endpoint and forbidden otherwise`}},
		{name: "endpoint strategy with static", spec: overlay(`{strategy: Endpoint, endpoint: {name: Calico_ep}, static: {}}`), wantErr: []string{`sourceVIP.static is required when strategy is Static and forbidden otherwise`}},
		{name: "static strategy without static", spec: overlay(`{strategy: Static}`), wantErr: []string{`sourceVIP.static is required when strategy is Static and forbidden otherwise`}},
		{name: "static strategy with endpoint", spec: overlay(`{strategy: Static, static: {}, endpoint: {name: x}}`), wantErr: []string{`sourceVIP.endpoint is required when strategy is Endpoint and forbidden otherwise`}},
		{name: "create parameters with endpoint strategy", spec: overlay(`{strategy: Endpoint, endpoint: {name: x}, create: {offsetFromEnd: 2}}`), wantErr: []string{`sourceVIP.create is only allowed when strategy is Create`}},
		{name: "empty endpoint name", spec: overlay(`{strategy: Endpoint, endpoint: {name: ""}}`), wantErr: []string{`spec.overlay.sourceVIP.endpoint.name: Invalid value: ""`}},
		{name: "static address is not an IP", spec: overlay(`{strategy: Static, static: {addresses: [{nodeName: win-1, address: 10.244.1.300}]}}`), wantErr: []string{`address must be a valid IPv4 address: overlay networks are IPv4 only`}},
		{name: "static address is IPv6", spec: overlay(`{strategy: Static, static: {addresses: [{nodeName: win-1, address: "fd00::2"}]}}`), wantErr: []string{`address must be a valid IPv4 address: overlay networks are IPv4 only`}},
		{name: "static address listed twice for a node", spec: overlay(`{strategy: Static, static: {addresses: [{nodeName: win-1, address: 10.0.0.1}, {nodeName: win-1, address: 10.0.0.2}]}}`), wantErr: []string{`spec.overlay.sourceVIP.static.addresses[1]: Duplicate value`}},
		{name: "offsetFromEnd zero", spec: overlay(`{strategy: Create, create: {offsetFromEnd: 0}}`), wantErr: []string{`spec.overlay.sourceVIP.create.offsetFromEnd: Invalid value: 0: spec.overlay.sourceVIP.create.offsetFromEnd in body should be greater than or equal to 1`}},
		{name: "feature gate name in lower case", spec: "network: {name: cbr0}\nfeatureGates: {winDSR: true}", wantErr: []string{`featureGates keys must be feature gate names such as WinDSR`}},
		{name: "feature gate name with a dash", spec: "network: {name: cbr0}\nfeatureGates: {Win-DSR: true}", wantErr: []string{`featureGates keys must be feature gate names such as WinDSR`}},
		{name: "WinOverlay false on an overlay config", spec: overlay(`{strategy: Create}`) + "\nfeatureGates: {WinOverlay: false}", wantErr: []string{`featureGates.WinOverlay cannot be false when network.type is Overlay`}},
		{name: "WinDSR false with DSR enabled", spec: "network: {name: cbr0}\ndsr: {enabled: true}\nfeatureGates: {WinDSR: false}", wantErr: []string{`featureGates.WinDSR cannot be false when dsr.enabled is true`}},
		{name: "minPeriod greater than period", spec: "network: {name: cbr0}\nsync: {periodSeconds: 5, minPeriodSeconds: 10}", wantErr: []string{`sync.minPeriodSeconds must not be greater than sync.periodSeconds`}},
		{name: "period zero", spec: "network: {name: cbr0}\nsync: {periodSeconds: 0, minPeriodSeconds: 0}", wantErr: []string{`spec.sync.periodSeconds: Invalid value: 0`}},
		{name: "maxUnavailable zero", spec: "network: {name: cbr0}\nrollout: {maxUnavailable: 0}", wantErr: []string{`rollout.maxUnavailable must be a number from 1 to 2147483647 or a percentage from 1% to 100%`}},
		{name: "maxUnavailable zero percent", spec: "network: {name: cbr0}\nrollout: {maxUnavailable: 0%}", wantErr: []string{`rollout.maxUnavailable must be a number from 1 to 2147483647 or a percentage from 1% to 100%`}},
		{name: "maxUnavailable over 100 percent", spec: "network: {name: cbr0}\nrollout: {maxUnavailable: 150%}", wantErr: []string{`rollout.maxUnavailable must be a number from 1 to 2147483647 or a percentage from 1% to 100%`}},
		{name: "maxUnavailable a word", spec: "network: {name: cbr0}\nrollout: {maxUnavailable: all}", wantErr: []string{`rollout.maxUnavailable must be a number from 1 to 2147483647 or a percentage from 1% to 100%`}},
		{name: "progress deadline too short", spec: "network: {name: cbr0}\nrollout: {progressDeadlineSeconds: 1}", wantErr: []string{`spec.rollout.progressDeadlineSeconds: Invalid value: 1`}},
		{name: "health check port out of range", spec: "network: {name: cbr0}\nhealthCheck: {port: 70000}", wantErr: []string{`spec.healthCheck.port: Invalid value: 70000`}},
		{name: "DSR enabled is not a boolean", spec: "network: {name: cbr0}\ndsr: {enabled: yes please}", wantErr: []string{`spec.dsr.enabled: Invalid value: "string": spec.dsr.enabled in body must be of type boolean`}},
		{name: "too many feature gates", spec: "network: {name: cbr0}\nfeatureGates: {Gate0: true, Gate1: true, Gate2: true, Gate3: true, Gate4: true, Gate5: true, Gate6: true, Gate7: true, Gate8: true, Gate9: true, Gate10: true, Gate11: true, Gate12: true, Gate13: true, Gate14: true, Gate15: true, Gate16: true, Gate17: true, Gate18: true, Gate19: true, Gate20: true, Gate21: true, Gate22: true, Gate23: true, Gate24: true, Gate25: true, Gate26: true, Gate27: true, Gate28: true, Gate29: true, Gate30: true, Gate31: true, Gate32: true}", wantErr: []string{`spec.featureGates: Too many: 33: must have at most 32 items`}},
		{name: "feature gate name too long", spec: "network: {name: cbr0}\nfeatureGates: {Wxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx: true}", wantErr: []string{`featureGates keys must be feature gate names such as WinDSR`}},
		{name: "endpoint name too long", spec: overlay(`{strategy: Endpoint, endpoint: {name: eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee}}`), wantErr: []string{`spec.overlay.sourceVIP.endpoint.name: Too long: may not be more than 256`}},
		{name: "node annotation too long", spec: overlay(`{strategy: Static, static: {nodeAnnotation: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa}}`), wantErr: []string{`spec.overlay.sourceVIP.static.nodeAnnotation: Too long: may not be more than 253`}},
		{name: "node name too long", spec: overlay(`{strategy: Static, static: {addresses: [{nodeName: nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn, address: 10.0.0.1}]}}`), wantErr: []string{`Too long: may not be more than 253`}},
		{name: "static address too long", spec: overlay(`{strategy: Static, static: {addresses: [{nodeName: n, address: 100.100.100.1000}]}}`), wantErr: []string{`Too long: may not be more than 15`}},
		{name: "offsetFromEnd too large", spec: overlay(`{strategy: Create, create: {offsetFromEnd: 65535}}`), wantErr: []string{`spec.overlay.sourceVIP.create.offsetFromEnd: Invalid value: 65535`}},
		{name: "root endpoint name too long", spec: "network: {name: cbr0}\nhealthCheck: {rootEndpointName: rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr}", wantErr: []string{`spec.healthCheck.rootEndpointName: Too long: may not be more than 256`}},
		{name: "health check port zero", spec: "network: {name: cbr0}\nhealthCheck: {port: 0}", wantErr: []string{`spec.healthCheck.port: Invalid value: 0`}},
		{name: "period over an hour", spec: "network: {name: cbr0}\nsync: {periodSeconds: 3601}", wantErr: []string{`spec.sync.periodSeconds: Invalid value: 3601`}},
		{name: "negative minPeriod", spec: "network: {name: cbr0}\nsync: {minPeriodSeconds: -1}", wantErr: []string{`spec.sync.minPeriodSeconds: Invalid value: -1`}},
		{name: "progress deadline over a day", spec: "network: {name: cbr0}\nrollout: {progressDeadlineSeconds: 86401}", wantErr: []string{`spec.rollout.progressDeadlineSeconds: Invalid value: 86401`}},
		{name: "paused is not a boolean", spec: "network: {name: cbr0}\nrollout: {paused: sometimes}", wantErr: []string{`spec.rollout.paused: Invalid value: "string"`}},
		{name: "maxUnavailable beyond int32", spec: "network: {name: cbr0}\nrollout: {maxUnavailable: 2147483648}", wantErr: []string{`rollout.maxUnavailable must be a number from 1 to 2147483647 or a percentage from 1% to 100%`}},
		{name: "maxUnavailable at the int32 bound", spec: "network: {name: cbr0}\nrollout: {maxUnavailable: 2147483647}"},
		{name: "maxUnavailable far beyond int64", spec: "network: {name: cbr0}\nrollout: {maxUnavailable: 99999999999999999999}", wantErr: []string{`spec.rollout.maxUnavailable`}},
		{name: "static address 0.0.0.0", spec: overlay(`{strategy: Static, static: {addresses: [{nodeName: win-1, address: 0.0.0.0}]}}`), wantErr: []string{`address must be a unicast address a pod could have`}},
		{name: "static address 255.255.255.255", spec: overlay(`{strategy: Static, static: {addresses: [{nodeName: win-1, address: 255.255.255.255}]}}`), wantErr: []string{`address must be a unicast address a pod could have`}},
		{name: "static address 127.0.0.1", spec: overlay(`{strategy: Static, static: {addresses: [{nodeName: win-1, address: 127.0.0.1}]}}`), wantErr: []string{`address must be a unicast address a pod could have`}},
		{name: "static address 224.0.0.5", spec: overlay(`{strategy: Static, static: {addresses: [{nodeName: win-1, address: 224.0.0.5}]}}`), wantErr: []string{`address must be a unicast address a pod could have`}},
		{name: "static address 239.255.255.250", spec: overlay(`{strategy: Static, static: {addresses: [{nodeName: win-1, address: 239.255.255.250}]}}`), wantErr: []string{`address must be a unicast address a pod could have`}},
		{name: "static address 169.254.10.1", spec: overlay(`{strategy: Static, static: {addresses: [{nodeName: win-1, address: 169.254.10.1}]}}`), wantErr: []string{`address must be a unicast address a pod could have`}},
		{name: "static address at the end of a pod CIDR", spec: overlay(`{strategy: Static, static: {addresses: [{nodeName: win-1, address: 10.244.1.254}]}}`)},
		{name: "health check port 10250 (kubelet)", spec: "network: {name: cbr0}\nhealthCheck: {port: 10250}", wantErr: []string{`healthCheck.port must not be a port the node already uses`}},
		{name: "health check port 10249 (kube-proxy metrics)", spec: "network: {name: cbr0}\nhealthCheck: {port: 10249}", wantErr: []string{`healthCheck.port must not be a port the node already uses`}},
		{name: "health check port 10265 (agent metrics)", spec: "network: {name: cbr0}\nhealthCheck: {port: 10265}", wantErr: []string{`healthCheck.port must not be a port the node already uses`}},
		{name: "health check port 10266 (agent probes)", spec: "network: {name: cbr0}\nhealthCheck: {port: 10266}", wantErr: []string{`healthCheck.port must not be a port the node already uses`}},
		{name: "health check port 10256, kube-proxy's", spec: "network: {name: cbr0}\nhealthCheck: {port: 10256}"},
	}
}

func wpnCases() []admissionCase {
	return []admissionCase{
		{name: "resolved node spec", spec: `
configName: calico
hash: 0123456789abcdef
proxy:
  network: {name: Calico, type: Overlay}
  enableDSR: true
  sourceVIP: {strategy: Static, address: 10.244.1.2}
  nodeIPs: [10.0.0.1]
  podCIDRs: [10.244.1.0/24]
  kubernetesVersion: "1.33"`},
		{name: "node spec without hash", spec: "configName: c\nproxy: {network: {name: cbr0}}", wantErr: []string{`spec.hash: Required value`}},
		{name: "node spec without config name", spec: "hash: abc\nproxy: {network: {name: cbr0}}", wantErr: []string{`spec.configName: Required value`}},
		{name: "node spec with three node IPs", spec: "configName: c\nhash: abc\nproxy: {network: {name: cbr0}, nodeIPs: [10.0.0.1, 10.0.0.2, 10.0.0.3]}", wantErr: []string{`spec.proxy.nodeIPs: Too many: 3: must have at most 2 items`}},
		{name: "node spec with a bad source VIP address", spec: "configName: c\nhash: abc\nproxy: {network: {name: vxlan0, type: Overlay}, sourceVIP: {strategy: Static, address: not-an-ip}}", wantErr: []string{`sourceVIP.address must be a valid IPv4 address`}},
		{name: "node spec with a bad sync period", spec: "configName: c\nhash: abc\nproxy: {network: {name: cbr0}, sync: {periodSeconds: 2, minPeriodSeconds: 3}}", wantErr: []string{`sync.minPeriodSeconds must not be greater than sync.periodSeconds`}},
		{name: "node spec hash too long", spec: "configName: c\nhash: hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh\nproxy: {network: {name: cbr0}}", wantErr: []string{`spec.hash: Too long: may not be more than 64`}},
		{name: "node spec config name too long", spec: "configName: cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc\nhash: abc\nproxy: {network: {name: cbr0}}", wantErr: []string{`spec.configName: Too long: may not be more than 253`}},
		{name: "node spec with three pod CIDRs", spec: "configName: c\nhash: abc\nproxy: {network: {name: cbr0}, podCIDRs: [10.244.1.0/24, 10.244.2.0/24, 10.244.3.0/24]}", wantErr: []string{`spec.proxy.podCIDRs: Too many: 3: must have at most 2 items`}},
		{name: "node spec kubernetes version too long", spec: "configName: c\nhash: abc\nproxy: {network: {name: cbr0}, kubernetesVersion: 1.33.0-very-long-suffix}", wantErr: []string{`spec.proxy.kubernetesVersion: Too long: may not be more than 16`}},
		{name: "node spec with an unknown network type", spec: "configName: c\nhash: abc\nproxy: {network: {name: cbr0, type: NAT}}", wantErr: []string{`spec.proxy.network.type: Unsupported value: "NAT"`}},
	}
}

func TestAdmission(t *testing.T) {
	var cases []admissionCase
	for _, tc := range wpcCases() {
		tc.kind = "WindowsProxyConfig"
		cases = append(cases, tc)
	}
	for _, tc := range wpnCases() {
		tc.kind = "WindowsProxyNode"
		cases = append(cases, tc)
	}
	for i, tc := range cases {
		t.Run(tc.kind+"/"+tc.name, func(t *testing.T) {
			ctx := context.Background()
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion("winproxy.io/v1alpha1")
			obj.SetKind(tc.kind)
			obj.SetName(fmt.Sprintf("case-%d", i))
			var spec map[string]any
			if err := yaml.Unmarshal([]byte(tc.spec), &spec); err != nil {
				t.Fatalf("bad test spec: %v", err)
			}
			obj.Object["spec"] = spec

			err := env.Client.Create(ctx, obj)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("object was accepted, want rejection with %q", tc.wantErr)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("rejection message\n  %s\ndoes not contain\n  %s", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("object was rejected: %v", err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(ctx, obj) })
			if tc.wantSpec == "" {
				return
			}
			got := &unstructured.Unstructured{}
			got.SetAPIVersion("winproxy.io/v1alpha1")
			got.SetKind(tc.kind)
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if err := yaml.Unmarshal([]byte(tc.wantSpec), &want); err != nil {
				t.Fatalf("bad wantSpec: %v", err)
			}
			// Round-trip want through JSON so that numbers compare as the client decodes them.
			wantJSON, _ := yaml.Marshal(want)
			var wantNorm map[string]any
			_ = yaml.Unmarshal(wantJSON, &wantNorm)
			gotJSON, _ := yaml.Marshal(got.Object["spec"])
			var gotNorm map[string]any
			_ = yaml.Unmarshal(gotJSON, &gotNorm)
			if diff := cmp.Diff(wantNorm, gotNorm); diff != "" {
				t.Errorf("spec read back differs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatusBounds checks the bounds of what the controller and the agents write into status.
func TestStatusBounds(t *testing.T) {
	ctx := context.Background()
	wpc := &v1alpha1.WindowsProxyConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "status-bounds"},
		Spec:       v1alpha1.WindowsProxyConfigSpec{Network: v1alpha1.NetworkSpec{Name: "cbr0"}},
	}
	if err := env.Client.Create(ctx, wpc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, wpc) })
	for i := range 11 {
		wpc.Status.FailingNodes = append(wpc.Status.FailingNodes, v1alpha1.NodeProblem{Name: fmt.Sprintf("n%d", i), Reason: "NodeDegraded"})
	}
	err := env.Client.Status().Update(ctx, wpc)
	if err == nil || !strings.Contains(err.Error(), "status.failingNodes: Too many: 11: must have at most 10 items") {
		t.Errorf("11 failing nodes: %v", err)
	}
	wpc.Status.FailingNodes = []v1alpha1.NodeProblem{{Name: "n", Reason: "not a reason!"}}
	err = env.Client.Status().Update(ctx, wpc)
	if err == nil || !strings.Contains(err.Error(), "status.failingNodes[0].reason: Invalid value") {
		t.Errorf("a reason that is not a CamelCase word: %v", err)
	}
	wpc.Status.FailingNodes = nil
	wpc.Status.Nodes.Selected = -1
	err = env.Client.Status().Update(ctx, wpc)
	if err == nil || !strings.Contains(err.Error(), "status.nodes.selected: Invalid value: -1") {
		t.Errorf("negative node count: %v", err)
	}
	wpc.Status.Nodes.Selected = 0

	wpn := &v1alpha1.WindowsProxyNode{
		ObjectMeta: metav1.ObjectMeta{Name: "status-bounds"},
		Spec:       v1alpha1.WindowsProxyNodeSpec{ConfigName: "c", Hash: "h", Proxy: v1alpha1.ResolvedProxyConfig{Network: v1alpha1.NetworkSpec{Name: "cbr0"}}},
	}
	if err := env.Client.Create(ctx, wpn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, wpn) })
	// A count beyond int32 would make the object undecodable for every typed client, the
	// controller's cache included.
	for _, obj := range []client.Object{wpc, wpn} {
		field := `{"status":{"nodes":{"selected":2147483648}}}`
		if _, ok := obj.(*v1alpha1.WindowsProxyNode); ok {
			field = `{"status":{"loadBalancers":{"desired":2147483648}}}`
		}
		err := env.Client.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(field)))
		if err == nil || !strings.Contains(err.Error(), "2147483648") {
			t.Errorf("%T status count 2147483648: %v", obj, err)
		}
	}
	for _, tc := range []struct {
		name string
		set  func(*v1alpha1.WindowsProxyNodeStatus)
		// wantErr is a substring of the rejection; empty means accepted.
		wantErr string
	}{
		{name: "what the agent writes", set: func(st *v1alpha1.WindowsProxyNodeStatus) {
			now := metav1.Now()
			*st = v1alpha1.WindowsProxyNodeStatus{
				ObservedHash:                 "0123456789abcdef",
				Network:                      v1alpha1.NetworkStatus{Name: "vxlan0", ID: "6a2cf3a4-7b1c-4f2e-9a3d-0c5e8f1b2d47", Type: "Overlay"},
				SourceVIP:                    v1alpha1.SourceVIPStatus{Address: "10.244.1.254", Origin: v1alpha1.SourceVIPOriginCreate},
				DSR:                          v1alpha1.DSRStatus{Requested: true, Active: true},
				IPFamilies:                   []v1alpha1.IPFamily{v1alpha1.IPv4},
				HNS:                          v1alpha1.HNSStatus{Version: "13.3", Capabilities: []string{"RemoteSubnet", "DSR", "IPv6DualStack", "SessionAffinity", "ModifyLoadBalancer"}, WindowsBuild: "20348"},
				LoadBalancers:                v1alpha1.LoadBalancerCounts{Desired: 11, Programmed: 10, Failed: 1},
				RemoteEndpoints:              20,
				LastSyncTime:                 &now,
				LastSyncDurationMilliseconds: 12,
				AgentVersion:                 "v0.1.0-3-gabcdef0",
			}
		}},
		{name: "IPv6 source VIP", set: func(st *v1alpha1.WindowsProxyNodeStatus) { st.SourceVIP.Address = "fd00::2" }},
		{name: "unknown IP family", set: func(st *v1alpha1.WindowsProxyNodeStatus) { st.IPFamilies = []v1alpha1.IPFamily{"IPv5"} }, wantErr: `status.ipFamilies[0]: Unsupported value: "IPv5"`},
		{name: "source VIP not an IP", set: func(st *v1alpha1.WindowsProxyNodeStatus) { st.SourceVIP.Address = "10.244.1.999" }, wantErr: "sourceVIP.address must be an IP address"},
		{name: "negative load balancer count", set: func(st *v1alpha1.WindowsProxyNodeStatus) { st.LoadBalancers.Failed = -1 }, wantErr: "status.loadBalancers.failed: Invalid value: -1"},
		{name: "negative remote endpoints", set: func(st *v1alpha1.WindowsProxyNodeStatus) { st.RemoteEndpoints = -5 }, wantErr: "status.remoteEndpoints: Invalid value: -5"},
		{name: "negative sync duration", set: func(st *v1alpha1.WindowsProxyNodeStatus) { st.LastSyncDurationMilliseconds = -1 }, wantErr: "status.lastSyncDurationMilliseconds: Invalid value: -1"},
		{name: "HNS version not major.minor", set: func(st *v1alpha1.WindowsProxyNodeStatus) { st.HNS.Version = "thirteen" }, wantErr: "status.hns.version: Invalid value"},
		{name: "capability with spaces", set: func(st *v1alpha1.WindowsProxyNodeStatus) { st.HNS.Capabilities = []string{"rm -rf"} }, wantErr: "status.hns.capabilities[0]: Invalid value"},
		{name: "Windows build not a number", set: func(st *v1alpha1.WindowsProxyNodeStatus) { st.HNS.WindowsBuild = "latest" }, wantErr: "status.hns.windowsBuild: Invalid value"},
	} {
		t.Run("WindowsProxyNode/"+tc.name, func(t *testing.T) {
			w := &v1alpha1.WindowsProxyNode{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(wpn), w); err != nil {
				t.Fatal(err)
			}
			tc.set(&w.Status)
			err := env.Client.Status().Update(ctx, w)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("rejected: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("got %v, want a rejection with %q", err, tc.wantErr)
			}
		})
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(wpn), wpn); err != nil {
		t.Fatal(err)
	}
	for i := range 17 {
		wpn.Status.Conditions = append(wpn.Status.Conditions, metav1.Condition{
			Type: fmt.Sprintf("C%d", i), Status: metav1.ConditionTrue, Reason: "R", LastTransitionTime: metav1.Now(),
		})
	}
	err = env.Client.Status().Update(ctx, wpn)
	if err == nil || !strings.Contains(err.Error(), "status.conditions: Too many: 17: must have at most 16 items") {
		t.Errorf("17 conditions: %v", err)
	}
}
