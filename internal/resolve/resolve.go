// Package resolve turns a WindowsProxyConfig into the configuration of one node: feature gates
// evaluated at that node's Kubernetes version the way its kube-proxy would, and the node's own
// inputs (source VIP, pod CIDRs, IPs) filled in. It is pure so that every rule is table-tested.
package resolve

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/featuregate"
	"github.com/winproxy/winproxy/internal/nodeinfo"
)

// Error is a node-specific resolution failure: the node keeps its last good config and the
// config's status reports Reason and Message.
type Error struct {
	// Reason is one of the per-node reasons of api/v1alpha1 (e.g. FeatureGateLocked).
	Reason string
	// Message has kube-proxy's wording first, then what to do.
	Message string
}

func (e *Error) Error() string { return e.Message }

// IsFeatureGateReason reports whether reason is about feature gates (as opposed to per-node inputs
// such as the source VIP): a config whose gates fail on every node is not Accepted.
func IsFeatureGateReason(reason string) bool {
	switch reason {
	case winproxyv1alpha1.ReasonUnknownFeatureGate, winproxyv1alpha1.ReasonFeatureGateLocked, winproxyv1alpha1.ReasonFeatureGateDisabled:
		return true
	}
	return false
}

// Minor returns the Kubernetes minor version of a kubelet version such as "v1.33.2" or
// "v1.34.0-eks-113cf36".
func Minor(kubeletVersion string) (int, error) {
	v, err := version.ParseGeneric(kubeletVersion)
	if err != nil {
		return 0, err
	}
	if v.Major() != 1 {
		return 0, fmt.Errorf("unsupported major version %d", v.Major())
	}
	return int(v.Minor()), nil
}

// AddressHolder names what in the cluster already holds an IP address (e.g. "the ClusterIP of
// Service default/kubernetes"), or returns "" when nothing does. Pods are not asked: only a node's
// agent sees its pods' HNS endpoints, and it refuses a source VIP a pod holds (SourceVIPConflict).
type AddressHolder func(netip.Addr) string

// Option changes how Resolve works.
type Option func(*options)

type options struct {
	holder AddressHolder
}

// WithAddressHolder makes Resolve refuse a source VIP that holder says something holds.
// Without it, only the address itself is checked.
func WithAddressHolder(holder AddressHolder) Option {
	return func(o *options) { o.holder = holder }
}

// maxQuoted bounds how much of a value read from a node (an annotation, a kubelet version) a
// message quotes: node data can be tens of kilobytes, and messages end up in bounded API fields.
const maxQuoted = 64

// quote is %q of s, with s cut to maxQuoted bytes.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:runeStart(s, maxQuoted)]), len(s))
}

// clip cuts s to n bytes, marking the cut, for text that may quote node data (a parse error).
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:runeStart(s, n-3)] + "..."
}

// runeStart is the largest index at most n where a rune of s starts.
func runeStart(s string, n int) int {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// Resolve computes node's configuration from spec, or says why the node cannot use it.
func Resolve(spec *winproxyv1alpha1.WindowsProxyConfigSpec, node *corev1.Node, opts ...Option) (winproxyv1alpha1.ResolvedProxyConfig, *Error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	kubelet := node.Status.NodeInfo.KubeletVersion
	minor, err := Minor(kubelet)
	if err != nil {
		return winproxyv1alpha1.ResolvedProxyConfig{}, &Error{
			Reason:  winproxyv1alpha1.ReasonInvalidNodeVersion,
			Message: fmt.Sprintf("cannot read the node's Kubernetes version from kubelet version %s: %s", quote(kubelet), clip(err.Error(), 2*maxQuoted)),
		}
	}
	at := fmt.Sprintf("1.%d", minor)

	gates, err := featuregate.Effective(minor, spec.FeatureGates)
	if err != nil {
		reason := winproxyv1alpha1.ReasonUnknownFeatureGate
		if errors.As(err, new(*featuregate.LockedError)) {
			reason = winproxyv1alpha1.ReasonFeatureGateLocked
		}
		return winproxyv1alpha1.ResolvedProxyConfig{}, &Error{
			Reason:  reason,
			Message: fmt.Sprintf("%v (node runs Kubernetes %s; remove the gate from spec.featureGates)", err, at),
		}
	}
	if spec.DSR.Enabled && !gates[featuregate.WinDSR] {
		return winproxyv1alpha1.ResolvedProxyConfig{}, gateDisabled(featuregate.WinDSR, "dsr.enabled", minor)
	}
	if spec.Network.Type == winproxyv1alpha1.NetworkTypeOverlay && !gates[featuregate.WinOverlay] {
		return winproxyv1alpha1.ResolvedProxyConfig{}, gateDisabled(featuregate.WinOverlay, "network.type Overlay", minor)
	}

	out := winproxyv1alpha1.ResolvedProxyConfig{
		Network:           spec.Network,
		EnableDSR:         spec.DSR.Enabled,
		DualStack:         spec.DualStack.Enabled,
		FeatureGates:      gates,
		HealthCheck:       spec.HealthCheck,
		Sync:              spec.Sync,
		NodeIPs:           internalIPs(node),
		PodCIDRs:          podCIDRs(node),
		KubernetesVersion: at,
		// Unset is on: the CRD defaults it, and objects written before the field existed get the
		// same as new ones.
		TopologyAwareRouting: spec.TopologyAwareRouting == nil || *spec.TopologyAwareRouting,
	}
	if spec.Overlay != nil {
		vip, verr := sourceVIP(&spec.Overlay.SourceVIP, node, spec.Network.Type == winproxyv1alpha1.NetworkTypeOverlay)
		if verr == nil {
			verr = usable(vip, o.holder)
		}
		if verr != nil {
			return winproxyv1alpha1.ResolvedProxyConfig{}, verr
		}
		out.SourceVIP = vip
	}
	return out, nil
}

// gateDisabled is kube-proxy's start-up error when a feature needs a gate that is off, with the
// way out at this node's version.
func gateDisabled(gate, feature string, minor int) *Error {
	hint := fmt.Sprintf("Kubernetes 1.%d has no %s gate; upgrade the node", minor, gate)
	if _, exists := featuregate.Lookup(gate, minor); exists {
		hint = fmt.Sprintf("%s needs spec.featureGates.%s: true on Kubernetes 1.%d nodes", feature, gate, minor)
	}
	return &Error{
		Reason:  winproxyv1alpha1.ReasonFeatureGateDisabled,
		Message: fmt.Sprintf("%s feature gate not enabled (%s)", gate, hint),
	}
}

// sourceVIP fills in the node's source VIP. When the network is only possibly overlay (type Auto),
// a missing address is left for the agent to report if its network turns out to be overlay; an
// invalid one is always an error.
func sourceVIP(s *winproxyv1alpha1.SourceVIPSpec, node *corev1.Node, required bool) (*winproxyv1alpha1.ResolvedSourceVIP, *Error) {
	out := &winproxyv1alpha1.ResolvedSourceVIP{Strategy: s.Strategy}
	unavailable := func(format string, args ...any) *Error {
		return &Error{Reason: winproxyv1alpha1.ReasonSourceVIPUnavailable, Message: fmt.Sprintf(format, args...)}
	}
	switch s.Strategy {
	case winproxyv1alpha1.SourceVIPStrategyEndpoint:
		if s.Endpoint != nil {
			out.EndpointName = s.Endpoint.Name
		}
	case winproxyv1alpha1.SourceVIPStrategyStatic:
		addr, from := staticAddress(s.Static, node)
		switch {
		case addr == "" && required:
			return nil, unavailable("source-vip flag not set: node has no source VIP in %s; set it there or list the node in spec.overlay.sourceVIP.static.addresses", from)
		case addr == "":
		default:
			ip, err := netip.ParseAddr(addr)
			if err != nil || !ip.Is4() {
				return nil, unavailable("source VIP %s from %s is not an IPv4 address: overlay networks are IPv4 only", quote(addr), from)
			}
			out.Address = ip.String()
		}
	case winproxyv1alpha1.SourceVIPStrategyCreate:
		offset := int32(winproxyv1alpha1.DefaultSourceVIPOffsetFromEnd)
		if s.Create != nil && s.Create.OffsetFromEnd > 0 {
			offset = s.Create.OffsetFromEnd
		}
		prefix, ok := ipv4PodCIDR(node)
		switch {
		case !ok && required:
			return nil, unavailable("source-vip flag not set: node has no IPv4 pod CIDR to reserve the source VIP from (spec.podCIDRs is empty)")
		case !ok:
		default:
			ip, ok := fromEnd(prefix, offset)
			if !ok {
				return nil, unavailable("overlay.sourceVIP.create.offsetFromEnd %d does not fit in the node's pod CIDR %s", offset, prefix)
			}
			out.Address = ip.String()
		}
	}
	return out, nil
}

// usable refuses a source VIP that HNS cannot SNAT to (not a unicast address) or that a Service
// already holds: taking it would break that Service's traffic.
func usable(vip *winproxyv1alpha1.ResolvedSourceVIP, holder AddressHolder) *Error {
	if vip == nil || vip.Address == "" {
		return nil
	}
	ip := netip.MustParseAddr(vip.Address)
	unusable := func(why string) *Error {
		return &Error{Reason: winproxyv1alpha1.ReasonSourceVIPUnusable, Message: fmt.Sprintf("source VIP %s %s; give the node an unused unicast address of its pod CIDR that the CNI's IPAM never hands out", ip, why)}
	}
	if !ip.IsGlobalUnicast() {
		return unusable("is " + addressKind(ip) + ", not a unicast address")
	}
	if holder == nil {
		return nil
	}
	if h := holder(ip); h != "" {
		return unusable("is already held by " + h)
	}
	return nil
}

// addressKind names why ip is not a global unicast address.
func addressKind(ip netip.Addr) string {
	switch {
	case ip.IsUnspecified():
		return "the unspecified address"
	case ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "the broadcast address"
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsMulticast():
		return "a multicast address"
	case ip.IsLinkLocalUnicast():
		return "a link-local address"
	}
	return "a reserved address"
}

// staticAddress returns the node's entry in addresses, else its annotation, and where it looked.
func staticAddress(s *winproxyv1alpha1.SourceVIPStatic, node *corev1.Node) (addr, from string) {
	key := winproxyv1alpha1.SourceVIPAnnotation
	if s != nil {
		for _, a := range s.Addresses {
			if a.NodeName == node.Name {
				return a.Address, "spec.overlay.sourceVIP.static.addresses"
			}
		}
		if s.NodeAnnotation != "" {
			key = s.NodeAnnotation
		}
	}
	return node.Annotations[key], "node annotation " + key
}

// fromEnd counts offset addresses back from the broadcast address of prefix: offset 1 is the last
// usable address. ok is false when that falls on or before the network address.
func fromEnd(prefix netip.Prefix, offset int32) (netip.Addr, bool) {
	hostBits := 32 - prefix.Bits()
	size := uint64(1) << hostBits
	if uint64(offset) >= size-1 {
		return netip.Addr{}, false
	}
	b := prefix.Masked().Addr().As4()
	base := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v := base + uint32(size-1) - uint32(offset)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// podCIDRs returns at most one pod CIDR per family, as the API allows.
func podCIDRs(node *corev1.Node) []string {
	var out []string
	var seen4, seen6 bool
	for _, c := range nodeinfo.PodCIDRs(node) {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			continue
		}
		if is4 := p.Addr().Is4(); (is4 && !seen4) || (!is4 && !seen6) {
			seen4, seen6 = seen4 || is4, seen6 || !is4
			out = append(out, p.String())
		}
	}
	return out
}

func ipv4PodCIDR(node *corev1.Node) (netip.Prefix, bool) {
	for _, c := range podCIDRs(node) {
		if p := netip.MustParsePrefix(c); p.Addr().Is4() {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// internalIPs returns the node's first InternalIP of each family.
func internalIPs(node *corev1.Node) []string {
	var out []string
	var seen4, seen6 bool
	for _, a := range nodeinfo.InternalIPs(node) {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			continue
		}
		if is4 := ip.Is4(); (is4 && !seen4) || (!is4 && !seen6) {
			seen4, seen6 = seen4 || is4, seen6 || !is4
			out = append(out, ip.String())
		}
	}
	return out
}

// Hash identifies a resolved config: the first 16 hex digits of the SHA-256 of its JSON, which is
// stable because encoding/json sorts map keys.
func Hash(p *winproxyv1alpha1.ResolvedProxyConfig) string {
	b, err := json.Marshal(p)
	if err != nil {
		// A struct of strings, bools, ints and maps of bools always marshals.
		panic(fmt.Sprintf("marshalling a resolved proxy config: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
