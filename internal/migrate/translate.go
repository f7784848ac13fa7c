package migrate

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	netutils "k8s.io/utils/net"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/featuregate"
)

// ManagedLabel selects the nodes handed over to winproxy; the migration labels them one by one
// (docs/install.md#migrating-from-windows-kube-proxy).
const ManagedLabel = "winproxy.io/managed"

// currentMinor is the Kubernetes minor whose kube-proxy flags and feature gates the table knows.
const currentMinor = 37

// Result is a translation: the config and one warning per setting winproxy has no equivalent
// for, or gives another meaning.
type Result struct {
	Config   *v1alpha1.WindowsProxyConfig
	Warnings []string
}

// translation is the state of one Translate call.
type translation struct {
	in   *Input
	spec *v1alpha1.WindowsProxyConfigSpec
	warn []string
}

func (t *translation) warnf(format string, args ...any) {
	t.warn = append(t.warn, fmt.Sprintf(format, args...))
}

// Translate makes the WindowsProxyConfig name of what in holds. It selects the nodes labelled
// winproxy.io/managed=true, ready for the node-by-node migration.
func Translate(in *Input, name string) (*Result, error) {
	t := &translation{in: in, spec: &v1alpha1.WindowsProxyConfigSpec{
		NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{ManagedLabel: "true"}},
		Network:      v1alpha1.NetworkSpec{Type: v1alpha1.NetworkTypeAuto},
	}}
	t.warn = append(t.warn, in.notes...)
	if in.flags == 0 {
		t.warn = append(t.warn, in.hidden...)
	}
	if err := t.network(); err != nil {
		return nil, err
	}
	for _, key := range in.order {
		s, _ := t.setting(key)
		t.apply(s, in.values[key])
	}
	if t.spec.DualStack.Enabled && t.spec.Overlay != nil {
		t.warnf("the cluster is dual-stack (--cluster-cidr), but overlay networks proxy IPv4 only, as with kube-proxy: those nodes report DualStackDowngraded=True")
	}
	cfg := &v1alpha1.WindowsProxyConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "WindowsProxyConfig"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       *t.spec,
	}
	return &Result{Config: cfg, Warnings: t.warn}, nil
}

func (t *translation) setting(key string) (Setting, bool) {
	for _, s := range Settings {
		if s.Name() == key {
			return s, true
		}
	}
	return Setting{}, false
}

// network is the HNS network: --network-name, winkernel.networkName, or $KUBE_NETWORK, which
// winkernel reads when neither is set.
func (t *translation) network() error {
	raw, from := "", ""
	if v, ok := t.in.values["--network-name"]; ok {
		raw, from = v.raw, v.from
	} else if v, ok := t.in.env["KUBE_NETWORK"]; ok {
		raw, from = v, "$KUBE_NETWORK"
	}
	if raw == "" {
		return errors.New("no HNS network name: kube-proxy reads it from --network-name, winkernel.networkName or $KUBE_NETWORK, and none was found; give the command line, configuration or DaemonSet that sets it")
	}
	name, ok := t.in.resolve(raw)
	if !ok {
		return fmt.Errorf("the HNS network name is %s (%s), which is computed on the node: set spec.network.name to the network your CNI creates (e.g. Calico, vxlan0, cbr0)", raw, from)
	}
	t.spec.Network.Name = name
	return nil
}

// apply translates one setting.
func (t *translation) apply(s Setting, v value) {
	switch s.Kind {
	case Field:
		t.field(s, v)
	case AgentFlag:
		t.agentFlag(s, v)
	case Ignored:
		if s.Flag == "proxy-mode" && v.raw != "" && v.raw != "kernelspace" {
			t.warnf("%s=%s (%s): %s", s.Name(), v.raw, v.from, s.Note)
		}
	case Unsupported:
		t.warnf("%s=%s (%s) has no equivalent in winproxy: %s", s.Name(), v.raw, v.from, s.Note)
	}
}

// agentFlag reports a setting that belongs to the agent's command line, when it differs from
// the agent's default.
func (t *translation) agentFlag(s Setting, v value) {
	defaults := map[string]string{"--v": "0", "--kube-api-qps": "5", "--kube-api-burst": "10", "--logging-format": "text"}
	if s.Flag == "hostname-override" || v.raw == defaults[s.Name()] {
		return
	}
	msg := fmt.Sprintf("%s=%s (%s) is not part of a WindowsProxyConfig: it is the agent's %s", s.Name(), v.raw, v.from, s.Target)
	if s.Note != "" {
		msg += "; " + s.Note
	}
	t.warn = append(t.warn, msg)
}

// field translates a setting that has a WindowsProxyConfig field.
func (t *translation) field(s Setting, v value) {
	raw, literal := t.in.resolve(v.raw)
	switch s.Flag {
	case "network-name":
		// Done first, by network.
	case "source-vip":
		t.sourceVIP(raw, literal, v)
	case "feature-gates":
		t.featureGates(raw, literal, v)
	default:
		if !literal {
			t.warnf("%s=%s (%s) is computed on the node: set %s yourself", s.Name(), v.raw, v.from, s.Target)
			return
		}
		if err := t.scalar(s, raw); err != nil {
			t.warnf("%s=%s (%s): %v; %s left at its default", s.Name(), v.raw, v.from, err, s.Target)
		}
	}
}

// scalar sets the fields that take one value.
func (t *translation) scalar(s Setting, raw string) error {
	spec := t.spec
	switch s.Flag {
	case "enable-dsr":
		b, err := strconv.ParseBool(raw)
		spec.DSR.Enabled = b
		return err
	case "forward-healthcheck-vip":
		b, err := strconv.ParseBool(raw)
		spec.HealthCheck.ForwardVIP = b
		return err
	case "root-hnsendpoint-name":
		if raw != v1alpha1.DefaultRootEndpointName {
			spec.HealthCheck.RootEndpointName = raw
		}
	case "cluster-cidr":
		t.dualStack(raw)
	case "healthz-bind-address":
		return t.healthz(raw)
	case "iptables-sync-period", "iptables-min-sync-period":
		return t.syncPeriod(s, raw)
	}
	return nil
}

// dualStack turns a dual-stack pair of cluster CIDRs into spec.dualStack.enabled: winkernel
// proxies both families on hosts that can.
func (t *translation) dualStack(raw string) {
	if dual, err := netutils.IsDualStackCIDRStrings(strings.Split(raw, ",")); err != nil || !dual {
		return
	}
	t.spec.DualStack.Enabled = true
}

// healthz takes the port of --healthz-bind-address; its IP belongs to the agent's flag.
func (t *translation) healthz(raw string) error {
	host, port, err := net.SplitHostPort(raw)
	if err != nil {
		return err
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("port %q is not a port number", port)
	}
	if p != v1alpha1.DefaultHealthCheckPort {
		t.spec.HealthCheck.Port = int32(p)
	}
	if host != "" && host != "0.0.0.0" && host != "::" {
		t.warnf("--healthz-bind-address=%s: its IP %s is the agent's --healthz-bind-address (chart value agent.healthz.bindAddress); the WindowsProxyConfig takes the port", raw, host)
	}
	return nil
}

// syncPeriod converts a kube-proxy duration into whole seconds within the CRD's bounds.
func (t *translation) syncPeriod(s Setting, raw string) error {
	d, err := time.ParseDuration(raw)
	if err != nil {
		return err
	}
	secs := int32(min((d+time.Second-1)/time.Second, 3600))
	if time.Duration(secs)*time.Second != d {
		t.warnf("%s=%s becomes %ds: %s takes whole seconds up to an hour", s.Name(), raw, secs, s.Target)
	}
	if s.Flag == "iptables-sync-period" {
		t.spec.Sync.PeriodSeconds = max(secs, 1)
	} else {
		t.spec.Sync.MinPeriodSeconds = secs
	}
	return nil
}

// gateLiteral is a feature-gate setting written in a script, e.g. "WinDSR=true".
var gateLiteral = regexp.MustCompile(`["']([A-Z][A-Za-z0-9]*=(?:true|false))["']`)

// featureGates copies kube-proxy's gates, without those kube-proxy 1.37 no longer knows (a node
// would refuse a config that names one).
func (t *translation) featureGates(raw string, literal bool, v value) {
	if !literal {
		var found []string
		for _, s := range t.in.scripts {
			for _, m := range gateLiteral.FindAllStringSubmatch(s, -1) {
				found = append(found, m[1])
			}
		}
		if len(found) == 0 {
			t.warnf("--feature-gates=%s (%s) is computed on the node: set spec.featureGates yourself", v.raw, v.from)
			return
		}
		raw = strings.Join(found, ",")
		t.warnf("--feature-gates=%s (%s) is computed by the script: took the gates it names, %s; check them against what it sets", v.raw, v.from, raw)
	}
	for _, kv := range strings.Split(raw, ",") {
		t.gate(strings.TrimSpace(kv))
	}
}

func (t *translation) gate(kv string) {
	if kv == "" {
		return
	}
	name, val, ok := strings.Cut(kv, "=")
	b, err := strconv.ParseBool(val)
	if !ok || err != nil {
		t.warnf("feature gate %q is not NAME=true|false: left out", kv)
		return
	}
	spec, known := featuregate.Lookup(name, currentMinor)
	switch {
	case !known:
		t.warnf("feature gate %s=%t no longer exists (kube-proxy 1.%d does not know it): left out, or every node would refuse the config", name, b, currentMinor)
		return
	case spec.Locked && b != spec.Default:
		t.warnf("feature gate %s=%t: the gate is locked to %t since it went GA, so nodes on 1.%d refuse it", name, b, spec.Default, currentMinor)
	}
	if t.spec.FeatureGates == nil {
		t.spec.FeatureGates = map[string]bool{}
	}
	t.spec.FeatureGates[name] = b
}

// endpointLookup is a script reading an HNS endpoint's address by name, as Calico's start script
// reads Calico_ep's.
var endpointLookup = regexp.MustCompile(`(?i)Get-HnsEndpoint[^\r\n]*?Name\s+-eq\s+["']([^"']+)["']`)

// sourceVIP picks the strategy that gives each node the source VIP kube-proxy was given.
func (t *translation) sourceVIP(raw string, literal bool, v value) {
	if raw == "" {
		return
	}
	svip := v1alpha1.SourceVIPSpec{Strategy: v1alpha1.SourceVIPStrategyStatic, Static: &v1alpha1.SourceVIPStatic{}}
	script := strings.Join(t.in.scripts, "\n")
	switch m := endpointLookup.FindStringSubmatch(script); {
	case literal:
		svip.Static = t.staticAddress(raw)
	case m != nil:
		svip = v1alpha1.SourceVIPSpec{Strategy: v1alpha1.SourceVIPStrategyEndpoint, Endpoint: &v1alpha1.SourceVIPEndpoint{Name: m[1]}}
	case strings.Contains(strings.ToLower(script), "host-local"):
		svip = v1alpha1.SourceVIPSpec{Strategy: v1alpha1.SourceVIPStrategyCreate}
		t.warnf("--source-vip=%s (%s) is reserved on each node by the host-local IPAM plugin (the first free address of the node's subnet); "+
			"winproxy's Create strategy reserves the last usable address of the node's pod CIDR instead (spec.overlay.sourceVIP.create.offsetFromEnd), so the source VIP changes: keep that address out of the CNI's IPAM range", v.raw, v.from)
	default:
		t.warnf("--source-vip=%s (%s) is computed on the node: annotate each node with its source VIP (kubectl annotate node NODE %s=ADDRESS), or pick the Endpoint or Create strategy", v.raw, v.from, v1alpha1.SourceVIPAnnotation)
	}
	t.spec.Overlay = &v1alpha1.OverlaySpec{SourceVIP: svip}
}

// staticAddress keeps a literal source VIP: for the node kube-proxy named, or, since one address
// cannot serve every node, in each node's annotation.
func (t *translation) staticAddress(addr string) *v1alpha1.SourceVIPStatic {
	if a, err := netip.ParseAddr(addr); err != nil || !a.Is4() {
		t.warnf("--source-vip=%s is not an IPv4 address: annotate each node with its source VIP (%s)", addr, v1alpha1.SourceVIPAnnotation)
		return &v1alpha1.SourceVIPStatic{}
	}
	if host, ok := t.in.values["--hostname-override"]; ok {
		if node, literal := t.in.resolve(host.raw); literal && node != "" {
			return &v1alpha1.SourceVIPStatic{Addresses: []v1alpha1.NodeAddress{{NodeName: strings.ToLower(node), Address: addr}}}
		}
	}
	t.warnf("--source-vip=%s is one node's address: each node needs its own, in its annotation (kubectl annotate node NODE %s=ADDRESS)", addr, v1alpha1.SourceVIPAnnotation)
	return &v1alpha1.SourceVIPStatic{}
}
