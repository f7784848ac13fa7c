package hnstest

import "fmt"

// Claim is one behaviour of HNS that the simulator implements and the suite checks, with where
// it comes from. Sources name files relative to their module: hcsshim is
// github.com/Microsoft/hcsshim@v0.15.0, winkernel is k8s.io/kubernetes@v1.37.2
// pkg/proxy/winkernel. "Simulator choice" marks what no source settles: the simulator picked the
// strictest plausible answer, and only a run on real HNS can confirm it.
type Claim struct {
	ID     string
	Says   string
	Source string
	// Observed lists the real hosts a run of the suite confirmed the claim on, e.g. "Windows
	// Server 2022 build 20348.2849, HNS 13.3 (CI run URL)". Empty until someone runs the suite
	// on Windows and records it; docs/windows.md shows it.
	Observed []string
}

// Claims returns every claim the suite checks, in the order of docs/windows.md.
func Claims() []Claim { return append([]Claim(nil), claims...) }

var claims = []Claim{
	{
		ID:     "version",
		Says:   "Version reports the HNS version (major.minor) that capabilities are derived from; every supported host has the V2 API (9.2+).",
		Source: "hcsshim hcn/hcnglobals.go GetGlobals (GET /globals/version) and V2ApiSupport.",
	},
	{
		ID:     "network-by-name",
		Says:   "GetNetworkByName returns the network's ID, name and type; a missing name is network-not-found.",
		Source: "hcsshim hcn/hcnnetwork.go GetNetworkByName (filtered enumerate, NetworkNotFoundError when empty); hcn/hcnerrors_test.go TestMissingNetworkByName; winkernel hns.go getNetworkByName.",
	},
	{
		ID:     "ids-are-guids",
		Says:   "HNS assigns every endpoint and load balancer a new GUID; an ID in the create request is ignored.",
		Source: "hcsshim hcn/hcnendpoint.go createEndpoint and hcn/hcnloadbalancer.go createLoadBalancer (create with an empty guid.GUID, read the object back); delete and update parse IDs with guid.FromString.",
	},
	{
		ID:     "ids-case-insensitive",
		Says:   "An ID names its object whatever the case of its hex digits: get, delete and load-balancer backends accept it in lower case.",
		Source: "GUIDs are parsed, not compared as text (hcsshim hcn/hcnendpoint.go deleteEndpoint, hcn/hcnloadbalancer.go deleteLoadBalancer: guid.FromString); winkernel hns.go hashEndpoints upper-cases IDs and getEndpointByIpAddress compares network IDs with strings.EqualFold.",
	},
	{
		ID:     "endpoint-roundtrip",
		Says:   "An endpoint reads back as created (name, one IPv4 and one IPv6 address, MAC, remote flag, network), from create and from ListEndpoints; the name is kept, which is how winproxy marks its endpoints.",
		Source: "hcsshim hcn/hcnendpoint.go HostComputeEndpoint and createEndpoint (returns the queried object); winkernel hns.go createEndpoint and getAllEndpointsByNetwork read these fields back.",
	},
	{
		ID:     "endpoint-provider-address",
		Says:   "On an overlay network a remote endpoint keeps its ProviderAddress policy.",
		Source: "winkernel hns.go createEndpoint (ProviderAddress policy on overlay remote endpoints); hcsshim hcn/hcnpolicy.go ProviderAddressEndpointPolicySetting.",
	},
	{
		ID:     "endpoint-list-per-network",
		Says:   "ListEndpoints(network) lists exactly that network's endpoints, local and remote; an unknown network lists nothing without an error; ListEndpoints(\"\") lists every network's.",
		Source: "hcsshim hcn/hcnendpoint.go ListEndpointsOfNetwork (an enumerate filtered by network; GetEndpointByName turns an empty filtered result into EndpointNotFoundError, so an empty result is no error); winkernel hns.go getAllEndpointsByNetwork.",
	},
	{
		ID:     "id-enumeration",
		Says:   "ListEndpointIDs(network) and ListLoadBalancerIDs return the IDs of exactly the objects ListEndpoints(network) and ListLoadBalancers return, without opening them.",
		Source: "hcsshim hcn/hcnendpoint.go enumerateEndpoints and hcn/hcnloadbalancer.go enumerateLoadBalancers (HcnEnumerate* answers a JSON array of GUIDs, then every object is opened, queried and closed); the agent calls HcnEnumerate* itself (agent/hns/enumerate_windows.go).",
	},
	{
		ID:     "endpoint-by-name",
		Says:   "GetEndpointByName finds an endpoint by its exact name; a missing name is endpoint-not-found.",
		Source: "hcsshim hcn/hcnendpoint.go GetEndpointByName (EndpointNotFoundError); winkernel hns.go getEndpointByName (root and source-VIP endpoints).",
	},
	{
		ID:     "endpoint-delete",
		Says:   "A deleted endpoint is gone from ListEndpoints and GetEndpointByName; deleting it again is endpoint-not-found.",
		Source: "hcsshim hcn/hcnendpoint.go deleteEndpoint; HCN_E_ENDPOINT_NOT_FOUND 0x803B0002 (golang.org/x/sys/windows); docs/design/dataplane.md#hns-errors.",
	},
	{
		ID:     "endpoint-on-missing-network",
		Says:   "Creating an endpoint on a missing network is network-not-found.",
		Source: "hcsshim hcn/hcnendpoint.go createEndpoint (hcnOpenNetwork first); HCN_E_NETWORK_NOT_FOUND 0x803B0001; docs/design/dataplane.md#hns-errors.",
	},
	{
		ID:     "endpoint-duplicate-ip",
		Says:   "On Windows Server 2019 and 2022 a local and a remote endpoint can hold the same IP (either created first); later releases refuse the second as already-exists (0xb7); two local endpoints never share an IP.",
		Source: "winkernel hns.go getAllEndpointsByNetwork (\"a bug in Windows Server 2019 and 2022 that can cause two endpoints (local and remote) to be created with the same IP address\"), hns_test.go TestGetAllEndpointsByNetworkWithDupEP. The refusal and its code are a simulator choice.",
	},
	{
		ID:     "endpoint-address-limits",
		Says:   "An endpoint holds at most one IPv4 and one IPv6 address, and only a remote endpoint takes a ProviderAddress policy; anything else is invalid-IP.",
		Source: "Simulator choice, to catch agent bugs: winkernel reads at most two IP configurations per endpoint (hns.go getAllEndpointsByNetwork) and gives a PA policy only to remote endpoints (hns.go createEndpoint).",
	},
	{
		ID:     "lb-roundtrip",
		Says:   "A load balancer reads back as created (frontend VIPs, its one port mapping, flags, source VIP, backends) from create, get and list; a deleted one is gone from get and list.",
		Source: "hcsshim hcn/hcnloadbalancer.go createLoadBalancer (returns the queried object), GetLoadBalancerByID, ListLoadBalancers; hcn/hcnloadbalancer_test.go TestAddDSRLoadBalancer reads flags back. Backend order is not part of the claim (winkernel hashes backends order-independently, hns.go hashEndpoints).",
	},
	{
		ID:     "lb-kinds",
		Says:   "Every load-balancer shape winkernel programs is accepted and reads back: ClusterIP (TCP, UDP, with and without source VIP), NodePort (no VIP, LocalRoutedVIP|VipExternalIP), ExternalIP (VipExternalIP), ingress and health check with preserve-destination (UseMux|PreserveDIP), DSR where supported, and the ILB flag.",
		Source: "docs/design/dataplane.md#load-balancers (winkernel proxier.go syncProxyRules, hns.go getLoadBalancer and getLoadBalancerPolicyFlags, VipExternalIP = 16 in hns.go); flag values from hcsshim hcn/hcnloadbalancer.go; ILB from hcn/hcnloadbalancer_test.go TestAddILBLoadBalancer.",
	},
	{
		ID:     "lb-dsr",
		Says:   "The DSR flag is accepted from HNS 9.3 (not on 10.0 and 10.1) and refused with E_NOTIMPL below.",
		Source: "Version ranges: hcsshim hcn/hcnglobals.go DSRVersion. The refusal is a simulator choice: winkernel checks DsrSupported before using DSR, so what older HNS does with the flag is unknown.",
	},
	{
		ID:     "lb-ipv6",
		Says:   "IPv6 load balancers (flag 2, IPv6 VIP and backends) are accepted from HNS 11.10 and refused with E_NOTIMPL below; an IPv4 and an IPv6 NodePort load balancer on the same port coexist.",
		Source: "hcsshim hcn/hcnglobals.go IPv6DualStackVersion; docs/design/dataplane.md#load-balancer-identity (winkernel keys load balancers by family because dual-stack NodePort load balancers share VIP, port and protocol). The refusal is a simulator choice.",
	},
	{
		ID:     "lb-family-mismatch",
		Says:   "A VIP or source VIP of the other family than the IPv6 flag says is invalid-IP.",
		Source: "Simulator choice, to catch agent bugs (winkernel never sends one).",
	},
	{
		ID:     "lb-session-affinity",
		Says:   "Distribution types SourceIPProtocol (1) and SourceIP (2) are accepted from HNS 12.0 and refused with E_NOTIMPL below.",
		Source: "hcsshim hcn/hcnglobals.go SessionAffinityVersion; winkernel hns.go getLoadBalancer sends SourceIP for sessionAffinity: ClientIP. The refusal is a simulator choice: winkernel sends it anyway below 12.0 and only logs (docs/design/dataplane.md#session-affinity), so older HNS may accept and ignore it.",
	},
	{
		ID:     "lb-port-exists",
		Says:   "A second load balancer on a taken frontend (VIP or none, protocol, internal port, external port, family) fails with port-already-exists whatever its backends, flags or source VIP; changing any one of those five makes it a different frontend.",
		Source: "winkernel hns.go createOrReplaceLoadbalancer and findExistingLBIdByFrontend (the same tuple, an empty VIP included) and IsPolicyAlreadyExists (0x803b0013 or 0xb7); docs/design/dataplane.md#hns-errors. Upstream's test double (testing/hcnutils_mock.go CreateLoadBalancer) flags conflicts only between load balancers with a VIP; the simulator follows the production code, which expects NodePort load balancers to conflict too.",
	},
	{
		ID:     "lb-unknown-backend",
		Says:   "A load balancer naming a backend endpoint that does not exist is refused as endpoint-not-found.",
		Source: "Simulator choice (HCN_E_ENDPOINT_NOT_FOUND 0x803B0002, golang.org/x/sys/windows).",
	},
	{
		ID:     "lb-not-found",
		Says:   "Getting a missing load balancer is load-balancer-not-found; deleting one is not-found.",
		Source: "hcsshim hcn/hcnloadbalancer.go GetLoadBalancerByID (LoadBalancerNotFoundError on an empty filtered list). For delete, a simulator choice: winkernel reads the load balancer first and never deletes a missing one (hns.go deleteLoadBalancer).",
	},
	{
		ID:     "lb-modify",
		Says:   "From HNS 15.5 a modify replaces a load balancer's content in place: same ID, and a get shows the new backends. Below 15.5 it is E_NOTIMPL and the load balancer is unchanged. Modifying a missing load balancer is load-balancer-not-found on every version.",
		Source: "hcsshim hcn/hcnglobals.go ModifyLoadbalancerVersion (15.4), moved to 15.5 by hnslib after k/k #131466 (15.4 accepted modifies without updating backends; agent/hns/version.go); hcn/hcnloadbalancer_test.go TestCreateUpdateDeleteLoadBalancer; E_NOTIMPL per docs/design/dataplane.md#hns-errors; hcn/hcnloadbalancer.go updateLoadBalancer opens the load balancer before it modifies it, so a missing one fails first.",
	},
	{
		ID:     "lb-modify-conflict",
		Says:   "A modify onto another load balancer's frontend fails with port-already-exists; a modify that keeps its own frontend does not.",
		Source: "Simulator choice: the create rule of lb-port-exists, applied to modify.",
	},
	{
		ID:     "lb-backend-deleted",
		Says:   "Deleting an endpoint that a load balancer names succeeds, and the load balancer stays, still naming the deleted ID.",
		Source: "Simulator choice. Only the first half has support: winkernel deletes remote endpoints even when deleting their load balancer failed just before (proxier.go cleanupAllPolicies, endpointInfo.Cleanup), so upstream assumes HNS allows it. What the load balancer reports afterwards is documented nowhere we found.",
	},
	{
		ID:     "network-recreated",
		Says:   "A network deleted by its CNI takes its endpoints with it; load balancers stay, naming the vanished endpoints; the network created again under the same name has a new ID and no endpoints.",
		Source: "Simulator choice (sim.RemoveNetwork). CNIs recreate their network on restart (e.g. flannel #1391, #1423); whether HNS lets a network with endpoints be deleted, and what happens to load balancers, is documented nowhere we found.",
	},
	{
		ID:     "assume-modify-document-id",
		Says:   "Assumption: a modify whose document carries the load balancer's own ID (as the Windows adapter sends it) is accepted and keeps that ID.",
		Source: "No source states it: hcsshim hcn/hcnloadbalancer.go updateLoadBalancer sends the whole document, and winproxy's adapter sets Id in it; winkernel never modifies (it deletes and creates). The simulator ignores the document's ID.",
	},
	{
		ID:     "assume-remote-endpoint-name",
		Says:   "Assumption: a remote endpoint created with a Name keeps it, in a get by name and in the network's list; winproxy's winproxy- name is its proof of ownership of the endpoints it creates.",
		Source: "No source states it for remote endpoints: winkernel creates them without a name (hns.go createEndpoint); hcsshim hcn/hcnendpoint.go HostComputeEndpoint has Name for every endpoint.",
	},
	{
		ID:     "assume-id-enumeration-answer",
		Says:   "Assumption: HcnEnumerateEndpoints and HcnEnumerateLoadBalancers answer a JSON array of GUIDs, each once, which the adapter hands out without braces (an empty host answers an empty array or nothing, both read as no ID); any other answer fails the enumeration with an error that names the element (hns.ParseIDList).",
		Source: "hcsshim hcn/hcnendpoint.go enumerateEndpoints and hcn/hcnloadbalancer.go enumerateLoadBalancers unmarshal a []guid.GUID; the exact text (braces, case) is what the first Windows run records.",
	},
	{
		ID:     "assume-delete-missing",
		Says:   "Assumption: deleting a load balancer or an endpoint that does not exist is not-found (0x490 or 0x803B0002). winproxy no longer depends on it: on any other code it looks the object up by ID and counts it deleted if HNS no longer has it.",
		Source: "No source: winkernel looks the object up before it deletes (hns.go deleteLoadBalancer, deleteEndpoint); winproxy's ownership.Owned checks by ID after an unexplained failure. The case logs the code HNS answers.",
	},
}

// claimByID finds a claim; an unknown ID is a bug in the suite.
func claimByID(id string) Claim {
	for _, c := range claims {
		if c.ID == id {
			return c
		}
	}
	panic(fmt.Sprintf("hnstest: no claim %q", id))
}
