// Package plan is the preview behind `winproxy-agent plan`: from a file
// describing one node (its resolved config, the cluster objects the agent
// watches and its HNS host), or from a live cluster (FromCluster), it shows
// the HNS objects the agent would program and the status it would report,
// and, against a host's saved `hns dump`, the HNS calls it would make;
// without touching any HNS.
package plan

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/yaml"

	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/agent/hnsdump"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/nodeinfo"
	"github.com/winproxy/winproxy/internal/resolve"
)

// File is the plan input (docs/plan.md). Exactly one of WindowsProxyNode
// and WindowsProxyConfig is set; with a config, Node names the node it is
// resolved for (that node must be among Nodes).
type File struct {
	Node               string                       `json:"node,omitempty"`
	WindowsProxyNode   *v1alpha1.WindowsProxyNode   `json:"windowsProxyNode,omitempty"`
	WindowsProxyConfig *v1alpha1.WindowsProxyConfig `json:"windowsProxyConfig,omitempty"`
	Nodes              []corev1.Node                `json:"nodes,omitempty"`
	Services           []corev1.Service             `json:"services,omitempty"`
	EndpointSlices     []discoveryv1.EndpointSlice  `json:"endpointSlices,omitempty"`
	HNS                Host                         `json:"hns"`

	// Dump, when set, is the host as `winproxy-agent hns dump -o json` saved
	// it (plan --hns), instead of HNS: the plan then also shows the HNS calls
	// the agent would make against it. Never read from the file.
	Dump *hnsdump.Dump `json:"-"`
	// Assumptions say what FromCluster assumed; the plan repeats them.
	Assumptions []string `json:"-"`
}

// Host describes the node's HNS as `hnsdiag list all` would show it.
type Host struct {
	// Version is the HNS version "major.minor"; or give WindowsServer.
	Version string `json:"version,omitempty"`
	// WindowsServer is 2019, 2022 or 2025: the HNS version of that release.
	WindowsServer string `json:"windowsServer,omitempty"`
	// HostMAC is the MAC of the interface holding the node IP (overlay).
	HostMAC string `json:"hostMAC,omitempty"`
	// Network is the HNS network; omit it to preview a host where the
	// network does not exist yet.
	Network   *HostNetwork   `json:"network,omitempty"`
	Endpoints []HostEndpoint `json:"endpoints,omitempty"`
}

// HostNetwork is an HNS network.
type HostNetwork struct {
	Name          string         `json:"name"`
	ID            string         `json:"id,omitempty"`
	Type          string         `json:"type"`
	RemoteSubnets []RemoteSubnet `json:"remoteSubnets,omitempty"`
}

// RemoteSubnet is an overlay RemoteSubnetRoute policy.
type RemoteSubnet struct {
	DestinationPrefix string `json:"destinationPrefix"`
	ProviderAddress   string `json:"providerAddress"`
}

// HostEndpoint is an HNS endpoint on the network.
type HostEndpoint struct {
	ID     string   `json:"id,omitempty"`
	Name   string   `json:"name,omitempty"`
	IPs    []string `json:"ips"`
	Remote bool     `json:"remote,omitempty"`
}

// isZero reports whether the file gives no host at all.
func (h *Host) isZero() bool {
	return h.Version == "" && h.WindowsServer == "" && h.HostMAC == "" && h.Network == nil && len(h.Endpoints) == 0
}

// Parse reads a plan file (YAML or JSON), or a WindowsProxyConfig or
// WindowsProxyNode manifest as it is applied (e.g. one of config/samples),
// which FromCluster, or the node's name, completes. Unknown fields are
// errors, so a typo does not silently change the preview.
func Parse(data []byte) (*File, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("invalid plan file: %w", err)
	}
	var f File
	var into any = &f
	switch {
	case head.Kind == "" && head.APIVersion == "":
	case head.APIVersion != v1alpha1.GroupVersion.String():
		return nil, fmt.Errorf("a %s %s is no plan input: give a plan file (docs/plan.md), a WindowsProxyConfig or a WindowsProxyNode of %s", head.APIVersion, head.Kind, v1alpha1.GroupVersion)
	case head.Kind == "WindowsProxyConfig":
		f.WindowsProxyConfig = &v1alpha1.WindowsProxyConfig{}
		into = f.WindowsProxyConfig
	case head.Kind == "WindowsProxyNode":
		f.WindowsProxyNode = &v1alpha1.WindowsProxyNode{}
		into = f.WindowsProxyNode
	default:
		return nil, fmt.Errorf("a %s is no plan input: give a plan file (docs/plan.md), a WindowsProxyConfig or a WindowsProxyNode", head.Kind)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		return nil, fmt.Errorf("invalid plan file: %w", err)
	}
	return &f, nil
}

// Input turns the file into the engine's input, or explains what is wrong,
// naming the object and the field.
func (f *File) Input() (engine.Input, hns.Version, error) {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	in := engine.Input{NodeName: f.Node}
	switch {
	case f.WindowsProxyNode != nil && f.WindowsProxyConfig != nil:
		bad("set either windowsProxyNode or windowsProxyConfig, not both")
	case f.WindowsProxyNode != nil:
		if in.NodeName == "" {
			in.NodeName = f.WindowsProxyNode.Name
		}
		if in.NodeName == "" {
			bad("windowsProxyNode: metadata.name (the node's name) is required")
		}
		in.Config = f.WindowsProxyNode.Spec.Proxy
	case f.WindowsProxyConfig != nil:
		if in.NodeName == "" {
			bad("node: the node to resolve windowsProxyConfig %q for is required", f.WindowsProxyConfig.Name)
		}
	default:
		bad("one of windowsProxyNode or windowsProxyConfig is required")
	}

	for i := range f.Nodes {
		n := &f.Nodes[i]
		if n.Name == "" {
			bad("nodes[%d]: metadata.name is required", i)
		}
		if n.Name == in.NodeName {
			in.Node = n
		} else {
			in.Nodes = append(in.Nodes, n)
		}
	}
	if f.WindowsProxyConfig != nil && in.NodeName != "" {
		if in.Node == nil {
			bad("node %q: not found in nodes; resolving windowsProxyConfig %q needs the Node (its kubelet version, IPs and pod CIDRs): "+
				"read it from the cluster with --kubeconfig, or list it in a plan file (docs/plan.md)", in.NodeName, f.WindowsProxyConfig.Name)
		} else if cfg, err := resolve.Resolve(&f.WindowsProxyConfig.Spec, in.Node); err != nil {
			bad("windowsProxyConfig %q on node %q: %v", f.WindowsProxyConfig.Name, in.NodeName, err)
		} else {
			in.Config = cfg
		}
	}
	if f.WindowsProxyNode != nil || in.Config.Network.Name != "" {
		// A config that could not be resolved was reported above.
		validateConfig(&in.Config, bad)
	}

	for i := range f.Services {
		s := &f.Services[i]
		validateService(i, s, bad)
		in.Services = append(in.Services, s)
	}
	for i := range f.EndpointSlices {
		s := &f.EndpointSlices[i]
		validateSlice(i, s, bad)
		in.EndpointSlices = append(in.EndpointSlices, s)
	}
	var v hns.Version
	if f.Dump != nil {
		if !f.HNS.isZero() {
			bad("hns: give the host in the file or as an hns dump, not both")
		}
		v, in.HNS = dumpView(f.Dump, &in, bad)
	} else {
		v, in.HNS = f.HNS.view(bad)
	}
	return in, v, errors.Join(errs...)
}

// dumpView is the view the agent would have of the dumped host: its
// configured network, that network's endpoints, and the MAC of the
// interface holding the node IP.
func dumpView(d *hnsdump.Dump, in *engine.Input, bad func(string, ...any)) (hns.Version, engine.HNSView) {
	if d.APIVersion != hnsdump.APIVersion || d.Kind != hnsdump.Kind {
		bad("--hns: not an hns dump (apiVersion %q, kind %q): take one with winproxy-agent hns dump -o json", d.APIVersion, d.Kind)
		return hns.Version{}, engine.HNSView{}
	}
	v, err := d.Version()
	if err != nil {
		bad("--hns: %v", err)
	}
	view := engine.HNSView{Capabilities: hns.CapabilitiesFor(v)}
	name := in.Config.Network.Name
	if name == "" {
		return v, view // the config's problem, reported already
	}
	i := slices.IndexFunc(d.Networks, func(n hns.Network) bool { return n.Name == name })
	if i < 0 {
		names := make([]string, len(d.Networks))
		for j, n := range d.Networks {
			names[j] = n.Name
		}
		bad("--hns: the dump records network(s) [%s], not %q, the config's: take it with winproxy-agent hns dump --network %s -o json", strings.Join(names, ", "), name, name)
		return v, view
	}
	view.Found, view.Network = true, d.Networks[i]
	for _, ep := range d.Endpoints {
		if hns.SameID(ep.NetworkID, view.Network.ID) {
			view.Endpoints = append(view.Endpoints, ep.Endpoint)
		}
	}
	// The host MAC is looked up as the agent does, for the node's IPs in its order.
	for _, ip := range nodeinfo.IPs(in.Config.NodeIPs, in.Node) {
		if view.HostMAC = d.HostMAC(ip); view.HostMAC != "" {
			break
		}
	}
	return v, view
}

func validateConfig(c *v1alpha1.ResolvedProxyConfig, bad func(string, ...any)) {
	if c.Network.Name == "" {
		bad("windowsProxyNode: spec.proxy.network.name is required")
	}
	for i, a := range c.NodeIPs {
		if _, err := netip.ParseAddr(a); err != nil {
			bad("windowsProxyNode: spec.proxy.nodeIPs[%d]: %q is not an IP address", i, a)
		}
	}
	if sv := c.SourceVIP; sv != nil && sv.Address != "" {
		if _, err := netip.ParseAddr(sv.Address); err != nil {
			bad("windowsProxyNode: spec.proxy.sourceVIP.address: %q is not an IP address", sv.Address)
		}
	}
}

func validateService(i int, s *corev1.Service, bad func(string, ...any)) {
	name := fmt.Sprintf("services[%d] (%s/%s)", i, s.Namespace, s.Name)
	if s.Name == "" {
		bad("services[%d]: metadata.name is required", i)
	}
	if s.Spec.ClusterIP != corev1.ClusterIPNone && s.Spec.ClusterIP != "" {
		if _, err := netip.ParseAddr(s.Spec.ClusterIP); err != nil {
			bad("%s: spec.clusterIP: %q is not an IP address", name, s.Spec.ClusterIP)
		}
	}
	for j, a := range s.Spec.ClusterIPs {
		if a == corev1.ClusterIPNone {
			continue
		}
		if _, err := netip.ParseAddr(a); err != nil {
			bad("%s: spec.clusterIPs[%d]: %q is not an IP address", name, j, a)
		}
	}
	for j, a := range s.Spec.ExternalIPs {
		if _, err := netip.ParseAddr(a); err != nil {
			bad("%s: spec.externalIPs[%d]: %q is not an IP address", name, j, a)
		}
	}
	for j, ing := range s.Status.LoadBalancer.Ingress {
		if ing.IP == "" {
			continue
		}
		if _, err := netip.ParseAddr(ing.IP); err != nil {
			bad("%s: status.loadBalancer.ingress[%d].ip: %q is not an IP address", name, j, ing.IP)
		}
	}
	for j, p := range s.Spec.Ports {
		switch p.Protocol {
		case "", corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			bad("%s: spec.ports[%d].protocol: %q is not TCP, UDP or SCTP", name, j, p.Protocol)
		}
		if p.Port < 1 || p.Port > 65535 {
			bad("%s: spec.ports[%d].port: %d is not a port number", name, j, p.Port)
		}
	}
}

func validateSlice(i int, s *discoveryv1.EndpointSlice, bad func(string, ...any)) {
	name := fmt.Sprintf("endpointSlices[%d] (%s/%s)", i, s.Namespace, s.Name)
	if s.Labels[discoveryv1.LabelServiceName] == "" {
		bad("%s: metadata.labels[%q] is required: it names the slice's service", name, discoveryv1.LabelServiceName)
	}
	switch s.AddressType {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
	case discoveryv1.AddressTypeFQDN:
		return
	default:
		bad("%s: addressType: %q is not IPv4, IPv6 or FQDN", name, s.AddressType)
		return
	}
	for j, e := range s.Endpoints {
		for k, a := range e.Addresses {
			ip, err := netip.ParseAddr(a)
			if err != nil {
				bad("%s: endpoints[%d].addresses[%d]: %q is not an IP address", name, j, k, a)
			} else if (ip.Is4() || ip.Is4In6()) != (s.AddressType == discoveryv1.AddressTypeIPv4) {
				bad("%s: endpoints[%d].addresses[%d]: %s is not of addressType %s", name, j, k, a, s.AddressType)
			}
		}
	}
}

// view builds the HNS view; endpoints without an ID get "EP-<n>".
func (h *Host) view(bad func(string, ...any)) (hns.Version, engine.HNSView) {
	var v hns.Version
	switch {
	case h.Version != "":
		maj, min, ok := strings.Cut(h.Version, ".")
		a, err1 := strconv.Atoi(maj)
		b, err2 := strconv.Atoi(min)
		if !ok || err1 != nil || err2 != nil {
			bad("hns.version: %q is not an HNS version such as \"13.3\"", h.Version)
		}
		v = hns.Version{Major: a, Minor: b}
	case h.WindowsServer != "":
		p, err := sim.ProfileByName(h.WindowsServer)
		if err != nil {
			bad("hns.windowsServer: %v", err)
		}
		v = p.Version
	default:
		bad("hns.version or hns.windowsServer is required: HNS features depend on it")
	}
	view := engine.HNSView{Capabilities: hns.CapabilitiesFor(v), HostMAC: h.HostMAC}
	netID := ""
	if n := h.Network; n != nil {
		if n.Name == "" {
			bad("hns.network.name is required")
		}
		if n.Type == "" {
			bad("hns.network.type is required (L2Bridge or Overlay)")
		}
		netID = n.ID
		if netID == "" {
			netID = "NETWORK-1"
		}
		view.Found = true
		view.Network = hns.Network{ID: netID, Name: n.Name, Type: hns.NetworkType(n.Type)}
		for i, rs := range n.RemoteSubnets {
			p, err := netip.ParsePrefix(rs.DestinationPrefix)
			if err != nil {
				bad("hns.network.remoteSubnets[%d].destinationPrefix: %q is not a CIDR", i, rs.DestinationPrefix)
			}
			pa, err := netip.ParseAddr(rs.ProviderAddress)
			if err != nil {
				bad("hns.network.remoteSubnets[%d].providerAddress: %q is not an IP address", i, rs.ProviderAddress)
			}
			view.Network.RemoteSubnetRoutes = append(view.Network.RemoteSubnetRoutes, hns.RemoteSubnetRoute{DestinationPrefix: p.Masked(), ProviderAddress: pa})
		}
	}
	for i, e := range h.Endpoints {
		ep := hns.Endpoint{ID: e.ID, Name: e.Name, NetworkID: netID, Remote: e.Remote}
		if ep.ID == "" {
			ep.ID = fmt.Sprintf("EP-%d", i+1)
		}
		if len(e.IPs) == 0 {
			bad("hns.endpoints[%d] (%s): ips is required", i, ep.ID)
		}
		for j, a := range e.IPs {
			ip, err := netip.ParseAddr(a)
			if err != nil {
				bad("hns.endpoints[%d] (%s): ips[%d]: %q is not an IP address", i, ep.ID, j, a)
				continue
			}
			ep.IPs = append(ep.IPs, ip)
		}
		view.Endpoints = append(view.Endpoints, ep)
	}
	return v, view
}
