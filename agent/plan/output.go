package plan

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hnsdump"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// SchemaVersion identifies the JSON output schema (docs/plan.md). Fields
// are only ever added within one version.
const SchemaVersion = "winproxy.io/plan/v1"

// The plan's kind: not a Kubernetes API object, but printed by kubectl's
// printers (-o json|yaml), which want one, as `hns dump` is.
const (
	APIVersion = "plan.winproxy.io/v1"
	Kind       = "Plan"
)

// Plan is the preview: the output of `winproxy-agent plan -o json|yaml`.
type Plan struct {
	metav1.TypeMeta   `json:",inline"`
	SchemaVersion     string           `json:"schemaVersion"`
	Node              string           `json:"node"`
	HNSVersion        string           `json:"hnsVersion"`
	Status            Status           `json:"status"`
	LoadBalancers     []LoadBalancer   `json:"loadBalancers"`
	RemoteEndpoints   []RemoteEndpoint `json:"remoteEndpoints"`
	SourceVIPEndpoint *RemoteEndpoint  `json:"sourceVIPEndpoint,omitempty"`
	Problems          []Problem        `json:"problems"`
	// Assumptions say what was assumed about the host or the config, when
	// the plan was read from a cluster without the host's dump.
	Assumptions []string `json:"assumptions,omitempty"`
	// HNSCalls, HostLoadBalancers and HostEndpoints are set against an hns
	// dump (plan --hns): the writes the agent would make, in order, and what
	// becomes of each object the host holds.
	HNSCalls          []Call       `json:"hnsCalls,omitempty"`
	HostLoadBalancers []HostObject `json:"hostLoadBalancers,omitempty"`
	HostEndpoints     []HostObject `json:"hostEndpoints,omitempty"`
}

// Status is what the agent would write into WindowsProxyNode.status after one sync (the agent's
// own nodestatus.Build), less what only a running agent knows: times, hashes and its health
// servers.
type Status struct {
	Network    v1alpha1.NetworkStatus   `json:"network"`
	SourceVIP  v1alpha1.SourceVIPStatus `json:"sourceVIP"`
	DSR        v1alpha1.DSRStatus       `json:"dsr"`
	IPFamilies []v1alpha1.IPFamily      `json:"ipFamilies"`
	// HNS is the HNS version, the capabilities the agent relies on that it has and, from a
	// dump, the Windows build.
	HNS v1alpha1.HNSStatus `json:"hns"`
	// LoadBalancers and RemoteEndpoints count what the sync programs: against a dump, what the
	// agent's applier did there; otherwise every call is assumed to succeed.
	LoadBalancers          v1alpha1.LoadBalancerCounts `json:"loadBalancers"`
	RemoteEndpoints        int32                       `json:"remoteEndpoints"`
	TopologyRoutedServices int32                       `json:"topologyRoutedServices"`
	// Programmable is false when the agent would leave HNS as it is.
	Programmable bool        `json:"programmable"`
	Conditions   []Condition `json:"conditions"`
}

// Condition mirrors a metav1.Condition without timestamps.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// LoadBalancer is one HNS load balancer to program.
type LoadBalancer struct {
	Family       v1alpha1.IPFamily `json:"family"`
	Kind         engine.Kind       `json:"kind"`
	Service      string            `json:"service,omitempty"`
	Port         string            `json:"port,omitempty"`
	VIP          string            `json:"vip,omitempty"`
	Protocol     string            `json:"protocol"`
	ExternalPort uint16            `json:"externalPort"`
	InternalPort uint16            `json:"internalPort"`
	// Flags is the HNS LB flags value; FlagNames spells it out.
	Flags                uint32    `json:"flags"`
	FlagNames            []string  `json:"flagNames"`
	PortMappingFlags     uint32    `json:"portMappingFlags"`
	PortMappingFlagNames []string  `json:"portMappingFlagNames"`
	Distribution         string    `json:"distribution"`
	SourceVIP            string    `json:"sourceVIP,omitempty"`
	Backends             []Backend `json:"backends"`
}

// Backend is one load-balancer backend.
type Backend struct {
	IP string `json:"ip"`
	// Local backends name their existing HNS endpoint; remote ones use the
	// remote endpoint the agent creates for the IP.
	Local      bool   `json:"local"`
	EndpointID string `json:"endpointID,omitempty"`
}

// RemoteEndpoint is an HNS endpoint the agent would create.
type RemoteEndpoint struct {
	IP              string `json:"ip"`
	MAC             string `json:"mac"`
	ProviderAddress string `json:"providerAddress,omitempty"`
	// Purpose is "backend", "service-vip" or "source-vip".
	Purpose string `json:"purpose"`
}

// Problem is something that would not be programmed as asked.
type Problem struct {
	Service string `json:"service,omitempty"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Build computes the plan of a parsed file.
func Build(f *File) (*Plan, error) {
	in, v, err := f.Input()
	if err != nil {
		return nil, err
	}
	d := engine.Compute(in)
	p := &Plan{
		TypeMeta:      metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		SchemaVersion: SchemaVersion, Node: in.NodeName, HNSVersion: v.String(),
		LoadBalancers: []LoadBalancer{}, RemoteEndpoints: []RemoteEndpoint{}, Problems: []Problem{},
		Assumptions: f.Assumptions,
	}
	p.addDesired(d)
	s := agentSync{version: v, desired: d, result: assumedResult(d)}
	if f.Dump != nil {
		run, err := against(f.Dump, in.Config.Network.Name, in.HNS.HostMAC, in)
		if err != nil {
			return nil, fmt.Errorf("applying the plan to the dumped host: %w", err)
		}
		p.HNSCalls, p.HostLoadBalancers, p.HostEndpoints = run.calls, run.lbs, run.eps
		if p.HNSCalls == nil {
			p.HNSCalls = []Call{}
		}
		s = agentSync{version: v, windowsBuild: f.Dump.Host.WindowsBuild, desired: run.desired, result: run.result}
	}
	p.Status = s.status(f.WindowsProxyNode)
	return p, nil
}

// addDesired lists what d programs: its load balancers, the agent's endpoints, and its problems.
func (p *Plan) addDesired(d *engine.Desired) {
	for _, lb := range d.SortedLoadBalancers() {
		p.LoadBalancers = append(p.LoadBalancers, convertLB(lb))
	}
	for _, r := range d.SortedRemoteEndpoints() {
		re := RemoteEndpoint{IP: r.IP.String(), MAC: r.MAC, Purpose: "backend"}
		if r.ProviderAddress.IsValid() {
			re.ProviderAddress = r.ProviderAddress.String()
		}
		if r.ServiceVIP {
			re.Purpose = "service-vip"
		}
		p.RemoteEndpoints = append(p.RemoteEndpoints, re)
	}
	if s := d.SourceVIPEndpoint; s != nil {
		p.SourceVIPEndpoint = &RemoteEndpoint{IP: s.IP.String(), MAC: s.MAC, Purpose: "source-vip"}
	}
	for _, pr := range d.Problems() {
		p.Problems = append(p.Problems, Problem(pr))
	}
}

func convertLB(lb engine.LoadBalancer) LoadBalancer {
	out := LoadBalancer{
		Family: lb.Key.Family.IPFamily(), Kind: lb.Key.Kind, Service: lb.Key.Service, Port: lb.Key.Port,
		Protocol: hns.ProtocolName(lb.Key.Protocol), ExternalPort: lb.Key.ExternalPort, InternalPort: lb.InternalPort,
		Flags: uint32(lb.Flags), FlagNames: hnsdump.LBFlagNames(lb.Flags),
		PortMappingFlags: uint32(lb.PortMappingFlags), PortMappingFlagNames: hnsdump.PortFlagNames(lb.PortMappingFlags),
		Distribution: distributionNames[lb.Distribution], Backends: []Backend{},
	}
	if lb.Key.VIP.IsValid() {
		out.VIP = lb.Key.VIP.String()
	}
	if lb.SourceVIP.IsValid() {
		out.SourceVIP = lb.SourceVIP.String()
	}
	for _, b := range lb.Backends {
		out.Backends = append(out.Backends, Backend{IP: b.IP.String(), Local: b.Local, EndpointID: b.EndpointID})
	}
	return out
}

var distributionNames = map[hns.DistributionType]string{
	hns.DistributionNone: "None", hns.DistributionSourceIPProtocol: "SourceIPProtocol", hns.DistributionSourceIP: "SourceIP",
}

func named(v uint32, names []string) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%d=%s", v, strings.Join(names, "|"))
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
