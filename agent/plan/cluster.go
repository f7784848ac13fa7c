package plan

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/agent/selectors"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/nodeinfo"
)

// FromCluster completes f for node from a live cluster, reading what the node's agent reads: its
// WindowsProxyNode (unless f gives a config to preview instead), the Nodes, and the Services and
// EndpointSlices listed with kube-proxy's selectors. Unless f gives the host (hns, or a dump in
// Dump), it assumes the host a CNI usually leaves and says what it assumed in f.Assumptions.
//
// Which WindowsProxyConfig selects a node is the controller's decision (the oldest that matches,
// with hand-over rules), which the agent does not repeat: a node without a WindowsProxyNode is an
// error unless f names the config to preview.
func FromCluster(ctx context.Context, c client.Reader, node string, f *File) error {
	if len(f.Nodes) > 0 || len(f.Services) > 0 || len(f.EndpointSlices) > 0 {
		return errors.New("nodes, services and endpointSlices are read from the cluster: leave them out of the file")
	}
	if f.Node != "" && f.Node != node {
		return fmt.Errorf("the file is for node %q, not %q", f.Node, node)
	}
	if f.WindowsProxyNode != nil && f.WindowsProxyNode.Name != node {
		return fmt.Errorf("the file's windowsProxyNode is %q's, not %q's", f.WindowsProxyNode.Name, node)
	}
	f.Node = node

	var wpn v1alpha1.WindowsProxyNode
	switch err := c.Get(ctx, client.ObjectKey{Name: node}, &wpn); {
	case apierrors.IsNotFound(err):
		if f.WindowsProxyNode == nil && f.WindowsProxyConfig == nil {
			return fmt.Errorf("node %q has no WindowsProxyNode: no WindowsProxyConfig selects it, or the controller has not resolved one yet (kubectl get wpc); "+
				"to preview a config on it, give the config with -f CONFIG.yaml", node)
		}
	case err != nil:
		return fmt.Errorf("reading the WindowsProxyNode %s: %w", node, err)
	default:
		if f.WindowsProxyNode == nil && f.WindowsProxyConfig == nil {
			f.WindowsProxyNode = &wpn
		}
	}

	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return fmt.Errorf("listing Nodes: %w", err)
	}
	var services corev1.ServiceList
	if err := c.List(ctx, &services, client.MatchingLabelsSelector{Selector: selectors.ServiceLabels},
		client.MatchingFieldsSelector{Selector: selectors.ServiceFields}); err != nil {
		return fmt.Errorf("listing Services: %w", err)
	}
	var endpointSlices discoveryv1.EndpointSliceList
	if err := c.List(ctx, &endpointSlices, client.MatchingLabelsSelector{Selector: selectors.EndpointSliceLabels}); err != nil {
		return fmt.Errorf("listing EndpointSlices: %w", err)
	}
	f.Nodes, f.Services, f.EndpointSlices = nodes.Items, services.Items, endpointSlices.Items

	if cfg := f.WindowsProxyConfig; cfg != nil {
		if n := f.node(); n != nil && !selects(cfg, n) {
			f.Assumptions = append(f.Assumptions, fmt.Sprintf("windowsProxyConfig %q does not select node %q (spec.nodeSelector); previewed as if it did", cfg.Name, node))
		}
	}
	if f.Dump == nil && f.HNS.isZero() {
		var reported *v1alpha1.WindowsProxyNodeStatus
		if wpn.Name != "" {
			reported = &wpn.Status
		}
		return f.assumeHost(reported)
	}
	return nil
}

// node is the File's Node named f.Node, or nil.
func (f *File) node() *corev1.Node {
	for i := range f.Nodes {
		if f.Nodes[i].Name == f.Node {
			return &f.Nodes[i]
		}
	}
	return nil
}

// selects reports whether cfg's node selector matches n; a selector that cannot be parsed selects
// nothing, as in the controller.
func selects(cfg *v1alpha1.WindowsProxyConfig, n *corev1.Node) bool {
	if cfg.Spec.NodeSelector == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(cfg.Spec.NodeSelector)
	return err == nil && sel.Matches(labels.Set(n.Labels))
}

// assumedHostMAC stands for the host MAC, which only the host knows.
const assumedHostMAC = "<host MAC>"

// assumeHost fills f.HNS with the host a CNI usually leaves on the node, from the cluster and from
// what the node's agent reported (nil when there is no report), and lists in f.Assumptions what
// could not be known without the host.
func (f *File) assumeHost(reported *v1alpha1.WindowsProxyNodeStatus) error {
	if reported == nil {
		reported = &v1alpha1.WindowsProxyNodeStatus{}
	}
	network, sourceVIPEndpoint := f.configuredNetwork()
	h := Host{Version: reported.HNS.Version}
	if h.Version == "" {
		if p, ok := profileOfNode(f.node()); ok {
			h.Version = p.Version.String()
			f.Assumptions = append(f.Assumptions, fmt.Sprintf("HNS %s, that of Windows Server %s (the node's Windows build; its agent has not reported its HNS)", h.Version, p.WindowsServer))
		} else {
			return fmt.Errorf("node %q: the HNS version is unknown (its agent has not reported it and its Windows build is unknown): "+
				"give the host with --hns (winproxy-agent hns dump -o json on the node)", f.Node)
		}
	}
	typ := string(network.Type)
	if reported.Network.Name == network.Name && reported.Network.Type != "" {
		typ = reported.Network.Type
	}
	if typ == "" || typ == string(v1alpha1.NetworkTypeAuto) {
		return fmt.Errorf("node %q: network %q has type Auto and its agent has not reported the type it found: give the host with --hns", f.Node, network.Name)
	}
	h.Network = &HostNetwork{Name: network.Name, ID: reported.Network.ID, Type: typ}
	assumed := []string{fmt.Sprintf("network %s (%s) exists", network.Name, typ), "one local endpoint per pod the EndpointSlices place on this node"}
	overlay := strings.EqualFold(typ, string(v1alpha1.NetworkTypeOverlay))
	if overlay {
		h.HostMAC = assumedHostMAC
		h.Network.RemoteSubnets = remoteSubnets(f.Nodes, f.Node)
		assumed = append(assumed, "a remote-subnet route to each other node's pod CIDR through its InternalIP", "host MAC unknown ("+assumedHostMAC+")")
	}
	h.Endpoints = podEndpoints(f.EndpointSlices, f.Node)
	if sourceVIPEndpoint != "" {
		if a := reported.SourceVIP.Address; a != "" && reported.SourceVIP.Origin == v1alpha1.SourceVIPOriginEndpoint {
			h.Endpoints = append(h.Endpoints, HostEndpoint{Name: sourceVIPEndpoint, IPs: []string{a}})
			assumed = append(assumed, fmt.Sprintf("endpoint %s holds %s, as the agent reported", sourceVIPEndpoint, a))
		} else {
			assumed = append(assumed, fmt.Sprintf("endpoint %s is missing (the agent has not reported its address)", sourceVIPEndpoint))
		}
	}
	f.HNS = h
	f.Assumptions = append(f.Assumptions, "the host, without --hns: "+strings.Join(assumed, "; "))
	return nil
}

// configuredNetwork is the network of f's config and the name of the HNS endpoint that holds the
// source VIP ("" unless the config reads it from an endpoint).
func (f *File) configuredNetwork() (v1alpha1.NetworkSpec, string) {
	if cfg := f.WindowsProxyConfig; cfg != nil {
		endpoint := ""
		if o := cfg.Spec.Overlay; o != nil && o.SourceVIP.Strategy == v1alpha1.SourceVIPStrategyEndpoint && o.SourceVIP.Endpoint != nil {
			endpoint = o.SourceVIP.Endpoint.Name
		}
		return cfg.Spec.Network, endpoint
	}
	p := f.WindowsProxyNode.Spec.Proxy
	endpoint := ""
	if sv := p.SourceVIP; sv != nil && sv.Strategy == v1alpha1.SourceVIPStrategyEndpoint {
		endpoint = sv.EndpointName
	}
	return p.Network, endpoint
}

// profileOfNode finds the simulator profile of the node's Windows build, read from its kernel
// version (10.0.<build>.<revision> on Windows).
func profileOfNode(n *corev1.Node) (sim.Profile, bool) {
	if n == nil {
		return sim.Profile{}, false
	}
	parts := strings.Split(n.Status.NodeInfo.KernelVersion, ".")
	if len(parts) < 3 {
		return sim.Profile{}, false
	}
	for _, p := range sim.Profiles() {
		if fmt.Sprint(p.Build) == parts[2] {
			return p, true
		}
	}
	return sim.Profile{}, false
}

// remoteSubnets are the routes an overlay CNI programs: each other node's IPv4 pod CIDRs, through
// its IPv4 InternalIP.
func remoteSubnets(nodes []corev1.Node, self string) []RemoteSubnet {
	var out []RemoteSubnet
	for _, n := range nodes {
		if n.Name == self {
			continue
		}
		var pa string
		for _, a := range nodeinfo.InternalIPs(&n) {
			if ip, err := netip.ParseAddr(a); err == nil && ip.Is4() {
				pa = a
				break
			}
		}
		if pa == "" {
			continue
		}
		for _, c := range nodeinfo.PodCIDRs(&n) {
			if p, err := netip.ParsePrefix(c); err == nil && p.Addr().Is4() {
				out = append(out, RemoteSubnet{DestinationPrefix: c, ProviderAddress: pa})
			}
		}
	}
	return out
}

// podEndpoints are the local endpoints a CNI creates for the pods the slices place on node, one
// per address, named after the pod.
func podEndpoints(endpointSlices []discoveryv1.EndpointSlice, node string) []HostEndpoint {
	var out []HostEndpoint
	seen := map[string]bool{}
	for _, s := range endpointSlices {
		for _, e := range s.Endpoints {
			if e.NodeName == nil || *e.NodeName != node {
				continue
			}
			name := ""
			if e.TargetRef != nil {
				name = e.TargetRef.Name
			}
			for _, a := range e.Addresses {
				if !seen[a] {
					seen[a] = true
					out = append(out, HostEndpoint{Name: name, IPs: []string{a}})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b HostEndpoint) int { return strings.Compare(a.IPs[0], b.IPs[0]) })
	return out
}
