package plan

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/winproxy/winproxy/agent/ownership"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

func examplePlan(t *testing.T) *Plan {
	t.Helper()
	data, err := os.ReadFile("../../docs/examples/plan-overlay-dsr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExampleTable checks the load-balancer rows of the documented example:
// DSR on every ClusterIP LB, DSR on the ETP=Local service's external LBs
// only, the source VIP except for the external backend (node IP).
func TestExampleTable(t *testing.T) {
	var buf bytes.Buffer
	if err := Print(&buf, examplePlan(t), "table"); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"Source VIP:   10.244.1.254 from Create",
		"DSR:          requested=true active=true",
		"IPv4     clusterip   10.96.20.20:443/TCP   8443     1=DSR   0                                 SourceIP       10.244.1.254   10.244.1.11(local),10.244.3.30   shop/api:https",
		"IPv4     clusterip   10.96.30.30:443/TCP   443      1=DSR   0                                 None           10.0.0.11      203.0.113.5                      shop/payments:https",
		"IPv4     clusterip   10.96.10.10:80/TCP    8080     1=DSR   0                                 None           10.244.1.254   10.244.1.10(local),10.244.2.20   shop/web:http",
		"IPv4     nodeport    *:30443/TCP           8443     1=DSR   18=LocalRoutedVIP|VipExternalIP   SourceIP       10.244.1.254   10.244.1.11(local)               shop/api:https",
		"IPv4     nodeport    *:30080/TCP           8080     0       18=LocalRoutedVIP|VipExternalIP   None           10.244.1.254   10.244.1.10(local),10.244.2.20   shop/web:http",
		"IPv4     ingress     20.0.0.10:443/TCP     8443     1=DSR   16=VipExternalIP                  SourceIP       10.244.1.254   10.244.1.11(local)               shop/api:https",
		"10.244.1.254   source-vip    00-15-5D-01-02-03   -",
		"203.0.113.5    backend       02-11-cb-00-71-05   10.0.0.11",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q\n%s", want, out)
		}
	}
	if strings.Contains(out, "shop/db") {
		t.Errorf("headless service programmed:\n%s", out)
	}
}

func TestExampleJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := Print(&buf, examplePlan(t), "json"); err != nil {
		t.Fatal(err)
	}
	var got struct {
		SchemaVersion string `json:"schemaVersion"`
		Status        struct {
			Programmable bool `json:"programmable"`
			DSR          struct {
				Active bool `json:"active"`
			} `json:"dsr"`
		} `json:"status"`
		LoadBalancers []struct {
			Kind      string   `json:"kind"`
			VIP       string   `json:"vip"`
			Flags     uint32   `json:"flags"`
			FlagNames []string `json:"flagNames"`
			SourceVIP string   `json:"sourceVIP"`
		} `json:"loadBalancers"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.SchemaVersion != SchemaVersion || !got.Status.Programmable || !got.Status.DSR.Active || len(got.LoadBalancers) != 6 {
		t.Fatalf("unexpected plan: %s", buf.String())
	}
	lb := got.LoadBalancers[0]
	if lb.Kind != "clusterip" || lb.VIP != "10.96.20.20" || lb.Flags != 1 || !cmp.Equal(lb.FlagNames, []string{"DSR"}) || lb.SourceVIP != "10.244.1.254" {
		t.Errorf("first LB = %+v", lb)
	}
}

func TestBadInput(t *testing.T) {
	const base = `
node: win-1
windowsProxyNode:
  metadata: {name: win-1}
  spec: {configName: c, hash: h, proxy: {network: {name: vxlan0}}}
hns: {windowsServer: "2022", network: {name: vxlan0, type: L2Bridge}}
`
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown-field", base + "servics: []\n", `unknown field "servics"`},
		{"no-config", "node: x\nhns: {version: \"13.3\"}\n", "one of windowsProxyNode or windowsProxyConfig is required"},
		{"bad-cluster-ip", base + "services:\n- metadata: {namespace: a, name: web}\n  spec: {clusterIP: 10.0.0.300, ports: [{port: 80}]}\n",
			`services[0] (a/web): spec.clusterIP: "10.0.0.300" is not an IP address`},
		{"bad-protocol", base + "services:\n- metadata: {namespace: a, name: web}\n  spec: {clusterIP: 10.0.0.3, ports: [{port: 80, protocol: ICMP}]}\n",
			`services[0] (a/web): spec.ports[0].protocol: "ICMP" is not TCP, UDP or SCTP`},
		{"slice-without-service", base + "endpointSlices:\n- metadata: {namespace: a, name: s}\n  addressType: IPv4\n",
			`endpointSlices[0] (a/s): metadata.labels["kubernetes.io/service-name"] is required`},
		{"slice-bad-address", base + "endpointSlices:\n- metadata: {namespace: a, name: s, labels: {kubernetes.io/service-name: web}}\n  addressType: IPv4\n  endpoints: [{addresses: [fd00::1]}]\n",
			`endpointSlices[0] (a/s): endpoints[0].addresses[0]: fd00::1 is not of addressType IPv4`},
		{"bad-hns-version", strings.Replace(base, `windowsServer: "2022"`, `version: "13"`, 1), `hns.version: "13" is not an HNS version`},
		{"bad-remote-subnet", strings.Replace(base, "type: L2Bridge}", "type: Overlay, remoteSubnets: [{destinationPrefix: 10.244.2.0, providerAddress: 10.0.0.2}]}", 1),
			`hns.network.remoteSubnets[0].destinationPrefix: "10.244.2.0" is not a CIDR`},
		{"config-node-missing", "node: win-9\nwindowsProxyConfig:\n  metadata: {name: default}\n  spec: {network: {name: vxlan0}}\nhns: {version: \"13.3\"}\n",
			`node "win-9": not found in nodes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.yaml))
			if err == nil {
				_, err = Build(f)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestWindowsProxyConfigIsResolved(t *testing.T) {
	const in = `
node: win-1
windowsProxyConfig:
  metadata: {name: default}
  spec:
    network: {name: cbr0, type: L2Bridge}
    dsr: {enabled: true}
nodes:
- metadata: {name: win-1}
  status:
    nodeInfo: {kubeletVersion: v1.34.1}
    addresses: [{type: InternalIP, address: 10.0.0.11}]
hns: {windowsServer: "2019", network: {name: cbr0, type: L2Bridge}}
`
	f, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(f)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Status.DSR.Requested || !p.Status.DSR.Active || p.Status.Network.Type != "L2Bridge" {
		t.Errorf("status = %+v", p.Status)
	}
}

// conditionOf is the plan's condition of type typ, or the zero Condition.
func conditionOf(s Status, typ string) Condition {
	for _, c := range s.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return Condition{}
}

// TestStatusIsWhatTheAgentWrites: the plan's status is the agent's (nodestatus.Build), for a sync
// in which every call succeeds, or, against a dump, for the applier's run there; it claims nothing
// about health servers, which a plan does not run.
func TestStatusIsWhatTheAgentWrites(t *testing.T) {
	p := examplePlan(t)
	var types []string
	for _, c := range p.Status.Conditions {
		types = append(types, c.Type)
	}
	if diff := cmp.Diff([]string{
		v1alpha1.ConditionNetworkReady, v1alpha1.ConditionSourceVIPReady, v1alpha1.ConditionDSRActive,
		v1alpha1.ConditionDualStackDowngraded, v1alpha1.ConditionProgrammed, v1alpha1.ConditionDegraded,
		v1alpha1.ConditionReady, v1alpha1.ConditionReconciling, v1alpha1.ConditionStalled,
	}, types); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if c := conditionOf(p.Status, v1alpha1.ConditionProgrammed); c.Status != "True" || c.Message != "6 load balancers and 6 remote endpoints programmed" {
		t.Errorf("Programmed = %+v", c)
	}
	if want := (v1alpha1.LoadBalancerCounts{Desired: 6, Programmed: 6}); p.Status.LoadBalancers != want || p.Status.RemoteEndpoints != 6 {
		t.Errorf("counts %+v, %d remote endpoints; want %+v, 6", p.Status.LoadBalancers, p.Status.RemoteEndpoints, want)
	}

	// The agent's applier on a host without winproxy's objects programs what the plan assumes.
	s, host := exampleHost(t, false)
	ledger, _ := ownership.OpenLedger("")
	got, err := Build(exampleWithDump(t, dumpOf(t, s, host, ledger)))
	if err != nil {
		t.Fatal(err)
	}
	want := p.Status
	want.Network.ID, want.HNS.WindowsBuild = got.Status.Network.ID, "20348"
	if diff := cmp.Diff(want, got.Status); diff != "" {
		t.Errorf("status against the dump (-assumed +applied):\n%s", diff)
	}

	// Without its network nothing is programmed, and nothing is claimed in effect.
	f := exampleWithDump(t, dumpOf(t, s, host, ledger))
	f.Dump = nil
	f.HNS = Host{Version: "13.3"}
	if p, err = Build(f); err != nil {
		t.Fatal(err)
	}
	st := p.Status
	if st.Programmable || st.IPFamilies == nil || len(st.IPFamilies) != 0 || st.DSR.Active || st.LoadBalancers.Failed != st.LoadBalancers.Desired {
		t.Errorf("status of a node without its network: %+v", st)
	}
	if c := conditionOf(st, v1alpha1.ConditionDSRActive); c.Status != "Unknown" || c.Reason != v1alpha1.ReasonNetworkNotFound {
		t.Errorf("DSRActive = %+v, want Unknown/NetworkNotFound", c)
	}
	if c := conditionOf(st, v1alpha1.ConditionProgrammed); c.Status != "False" || !strings.HasSuffix(c.Message, "; load balancers already programmed are left as they are") {
		t.Errorf("Programmed = %+v", c)
	}
}
