// Package migrate turns what runs Windows kube-proxy (its command line, its
// KubeProxyConfiguration file, or its DaemonSet and ConfigMap) into a WindowsProxyConfig, and
// says which settings have no equivalent or mean something else in winproxy.
//
// The table below is the one place where kube-proxy's settings meet winproxy's: `winproxy-agent
// migrate` translates through it, and `winproxy-agent run` uses it to answer a kube-proxy flag
// with the field to set instead. docs/install.md#migrating-from-windows-kube-proxy has it for
// people.
package migrate

import (
	"fmt"
	"strings"
)

// Kind says what becomes of a kube-proxy setting.
type Kind int

const (
	// Field settings become a WindowsProxyConfig field.
	Field Kind = iota
	// AgentFlag settings are flags of `winproxy-agent run` too, with the same meaning; the chart
	// sets them from its values.
	AgentFlag
	// Ignored settings need nothing: winproxy does the same on its own (the proxy mode Windows
	// has, the kubeconfig the agent's service account replaces).
	Ignored
	// Unsupported settings have no equivalent in winproxy.
	Unsupported
)

// Setting is one kube-proxy setting: its flag, its KubeProxyConfiguration field, and what it is in
// winproxy.
type Setting struct {
	// Flag is the kube-proxy flag, without dashes.
	Flag string
	// Config is the KubeProxyConfiguration field (a JSON path), empty for flags without one.
	Config string
	Kind   Kind
	// Target is the WindowsProxyConfig field (Field) or what to set on the agent (AgentFlag).
	Target string
	// Note says why there is no equivalent, or how the meaning differs.
	Note string
	// Bool flags take no separate value on a command line.
	Bool bool
}

// Settings are kube-proxy's flags and configuration fields as of Kubernetes 1.37, Windows and
// Linux ones, since a Windows command line is often copied from a Linux one.
var Settings = []Setting{
	{Flag: "network-name", Config: "winkernel.networkName", Kind: Field, Target: "spec.network.name"},
	{Flag: "enable-dsr", Config: "winkernel.enableDSR", Kind: Field, Target: "spec.dsr.enabled", Bool: true},
	{Flag: "source-vip", Config: "winkernel.sourceVip", Kind: Field, Target: "spec.overlay.sourceVIP"},
	{Flag: "feature-gates", Config: "featureGates", Kind: Field, Target: "spec.featureGates"},
	{Flag: "cluster-cidr", Config: "clusterCIDR", Kind: Field, Target: "spec.dualStack.enabled",
		Note: "only a dual-stack pair means something on Windows (both families proxied); winkernel does not use the CIDR itself"},
	{Flag: "forward-healthcheck-vip", Config: "winkernel.forwardHealthCheckVip", Kind: Field, Target: "spec.healthCheck.forwardVIP", Bool: true},
	{Flag: "root-hnsendpoint-name", Config: "winkernel.rootHnsEndpointName", Kind: Field, Target: "spec.healthCheck.rootEndpointName"},
	{Flag: "healthz-bind-address", Config: "healthzBindAddress", Kind: Field, Target: "spec.healthCheck.port",
		Note: "its port is spec.healthCheck.port; its IP is the agent's --healthz-bind-address (chart value agent.healthz.bindAddress)"},
	{Flag: "iptables-sync-period", Config: "iptables.syncPeriod", Kind: Field, Target: "spec.sync.periodSeconds"},
	{Flag: "iptables-min-sync-period", Config: "iptables.minSyncPeriod", Kind: Field, Target: "spec.sync.minPeriodSeconds"},

	{Flag: "hostname-override", Config: "hostnameOverride", Kind: AgentFlag, Target: "--hostname-override (the chart passes the pod's node name)"},
	{Flag: "kube-api-qps", Config: "clientConnection.qps", Kind: AgentFlag, Target: "--kube-api-qps (chart value agent.extraArgs)"},
	{Flag: "kube-api-burst", Config: "clientConnection.burst", Kind: AgentFlag, Target: "--kube-api-burst (chart value agent.extraArgs)"},
	{Flag: "v", Config: "logging.verbosity", Kind: AgentFlag, Target: "--v (chart value agent.logLevel)"},
	{Flag: "vmodule", Config: "logging.vmodule", Kind: AgentFlag, Target: "--vmodule (chart value agent.extraArgs)"},
	{Flag: "logging-format", Config: "logging.format", Kind: AgentFlag, Target: "--logging-format (chart value agent.logFormat)"},
	{Flag: "log-flush-frequency", Config: "logging.flushFrequency", Kind: AgentFlag, Target: "--log-flush-frequency (chart value agent.extraArgs)"},
	{Flag: "metrics-bind-address", Config: "metricsBindAddress", Kind: AgentFlag, Target: "--metrics-bind-address (chart values agent.metrics.bindAddress and agent.metrics.port)",
		Note: "the agent's metrics listen on port 10265, not kube-proxy's 10249, so that both can run on one node during a migration"},

	{Flag: "proxy-mode", Config: "mode", Kind: Ignored, Note: "winproxy programs HNS as the kernelspace mode does; Windows has no other mode (userspace was removed in 1.26)"},
	{Flag: "kubeconfig", Config: "clientConnection.kubeconfig", Kind: Ignored, Note: "the agent uses its service account and the API server address the chart gives it (apiServer.host/port)"},
	{Flag: "config", Kind: Ignored, Note: "give the file to winproxy-agent migrate --config"},
	{Flag: "version", Kind: Ignored, Note: "winproxy-agent version prints the agent's", Bool: true},

	{Flag: "master", Kind: Unsupported, Note: "the chart's apiServer.host and apiServer.port give the agents the API server's address"},
	{Flag: "kube-api-content-type", Config: "clientConnection.contentType", Kind: Unsupported, Note: "the agent uses protobuf for Kubernetes types and JSON for its own"},
	{Flag: "bind-address", Config: "bindAddress", Kind: Unsupported, Note: "the agent takes the node's IPs from its Node object's InternalIP addresses"},
	{Flag: "masquerade-all", Config: "iptables.masqueradeAll", Kind: Unsupported, Note: "Linux only; winkernel ignores it, and so does winproxy", Bool: true},
	{Flag: "nodeport-addresses", Config: "nodePortAddresses", Kind: Unsupported,
		Note: "winkernel programs node ports on every address of the node (one load balancer without a VIP) and so does winproxy: the restriction is not applied"},
	{Flag: "windows-service", Config: "windowsRunAsService", Kind: Unsupported, Note: "the agent runs as a HostProcess DaemonSet pod, not a Windows service", Bool: true},
	{Flag: "cleanup", Kind: Unsupported, Note: "winproxy-agent cleanup removes what the agent programmed", Bool: true},
	{Flag: "bind-address-hard-fail", Config: "bindAddressHardFail", Kind: Unsupported,
		Note: "the agent keeps running and reports a health port it cannot bind (HealthCheckServing=False)", Bool: true},
	{Flag: "profiling", Config: "enableProfiling", Kind: Unsupported, Note: "the agent serves no /debug/pprof", Bool: true},
	{Flag: "show-hidden-metrics-for-version", Config: "showHiddenMetricsForVersion", Kind: Unsupported, Note: "the agent hides no metrics"},
	{Flag: "config-sync-period", Config: "configSyncPeriod", Kind: Unsupported, Note: "the agent's informers resync on their own; spec.sync.periodSeconds bounds the time between syncs"},
	{Flag: "detect-local-mode", Config: "detectLocalMode", Kind: Unsupported, Note: "Linux only"},
	{Flag: "pod-bridge-interface", Config: "detectLocal.bridgeInterface", Kind: Unsupported, Note: "Linux only"},
	{Flag: "pod-interface-name-prefix", Config: "detectLocal.interfaceNamePrefix", Kind: Unsupported, Note: "Linux only"},
	{Flag: "oom-score-adj", Config: "oomScoreAdj", Kind: Unsupported, Note: "Linux only"},
	{Flag: "iptables-masquerade-bit", Config: "iptables.masqueradeBit", Kind: Unsupported, Note: "Linux only"},
	{Flag: "iptables-localhost-nodeports", Config: "iptables.localhostNodePorts", Kind: Unsupported, Note: "Linux only", Bool: true},
	{Flag: "ipvs-sync-period", Config: "ipvs.syncPeriod", Kind: Unsupported, Note: "Linux only (ipvs mode); spec.sync.periodSeconds is the Windows period"},
	{Flag: "ipvs-min-sync-period", Config: "ipvs.minSyncPeriod", Kind: Unsupported, Note: "Linux only (ipvs mode); spec.sync.minPeriodSeconds is the Windows one"},
	{Flag: "ipvs-scheduler", Config: "ipvs.scheduler", Kind: Unsupported, Note: "Linux only (ipvs mode)"},
	{Flag: "ipvs-exclude-cidrs", Config: "ipvs.excludeCIDRs", Kind: Unsupported, Note: "Linux only (ipvs mode)"},
	{Flag: "ipvs-strict-arp", Config: "ipvs.strictARP", Kind: Unsupported, Note: "Linux only (ipvs mode)", Bool: true},
	{Flag: "ipvs-tcp-timeout", Config: "ipvs.tcpTimeout", Kind: Unsupported, Note: "Linux only (ipvs mode)"},
	{Flag: "ipvs-tcpfin-timeout", Config: "ipvs.tcpFinTimeout", Kind: Unsupported, Note: "Linux only (ipvs mode)"},
	{Flag: "ipvs-udp-timeout", Config: "ipvs.udpTimeout", Kind: Unsupported, Note: "Linux only (ipvs mode)"},
	{Config: "nftables.masqueradeBit", Kind: Unsupported, Note: "Linux only (nftables mode)"},
	{Config: "nftables.masqueradeAll", Kind: Unsupported, Note: "Linux only (nftables mode)"},
	{Config: "nftables.syncPeriod", Kind: Unsupported, Note: "Linux only (nftables mode)"},
	{Config: "nftables.minSyncPeriod", Kind: Unsupported, Note: "Linux only (nftables mode)"},
	{Flag: "conntrack-max-per-core", Config: "conntrack.maxPerCore", Kind: Unsupported, Note: "Linux only"},
	{Flag: "conntrack-min", Config: "conntrack.min", Kind: Unsupported, Note: "Linux only"},
	{Flag: "conntrack-tcp-timeout-established", Config: "conntrack.tcpEstablishedTimeout", Kind: Unsupported, Note: "Linux only"},
	{Flag: "conntrack-tcp-timeout-close-wait", Config: "conntrack.tcpCloseWaitTimeout", Kind: Unsupported, Note: "Linux only"},
	{Flag: "conntrack-tcp-be-liberal", Config: "conntrack.tcpBeLiberal", Kind: Unsupported, Note: "Linux only", Bool: true},
	{Flag: "conntrack-udp-timeout", Config: "conntrack.udpTimeout", Kind: Unsupported, Note: "Linux only"},
	{Flag: "conntrack-udp-timeout-stream", Config: "conntrack.udpStreamTimeout", Kind: Unsupported, Note: "Linux only"},
	{Flag: "init-only", Kind: Unsupported, Note: "Linux only", Bool: true},
	{Flag: "write-config-to", Kind: Unsupported, Note: "winproxy-agent migrate writes the WindowsProxyConfig"},
	{Flag: "healthz-port", Kind: Unsupported, Note: "deprecated in kube-proxy; spec.healthCheck.port is the health-check port"},
	{Flag: "metrics-port", Kind: Unsupported, Note: "deprecated in kube-proxy; the chart value agent.metrics.port is the agent's"},
	{Flag: "log-dir", Kind: Unsupported, Note: "removed from kube-proxy in 1.26; the agent logs to its standard error, which the kubelet keeps"},
	{Flag: "log-file", Kind: Unsupported, Note: "removed from kube-proxy in 1.26; the agent logs to its standard error, which the kubelet keeps"},
	{Flag: "logtostderr", Kind: Unsupported, Note: "removed from kube-proxy in 1.26; the agent always logs to its standard error", Bool: true},
	{Flag: "alsologtostderr", Kind: Unsupported, Note: "removed from kube-proxy in 1.26; the agent always logs to its standard error", Bool: true},
}

// ByFlag returns the setting of a kube-proxy flag (without dashes).
func ByFlag(flag string) (Setting, bool) {
	for _, s := range Settings {
		if s.Flag != "" && s.Flag == flag {
			return s, true
		}
	}
	return Setting{}, false
}

// Name is how a message names the setting: its flag, or its configuration field.
func (s Setting) Name() string {
	if s.Flag != "" {
		return "--" + s.Flag
	}
	return s.Config
}

// UnknownAgentFlagError explains a kube-proxy flag given to `winproxy-agent run`, which reads its
// proxy settings from its node's WindowsProxyConfig instead; nil when flag is not kube-proxy's or
// is one of the agent's too.
func UnknownAgentFlagError(flag string) error {
	s, ok := ByFlag(strings.TrimLeft(flag, "-"))
	if !ok || s.Kind == AgentFlag {
		return nil
	}
	const translate = "winproxy-agent migrate turns a kube-proxy command line or configuration into a WindowsProxyConfig"
	switch s.Kind {
	case Field:
		return fmt.Errorf("--%s is a kube-proxy flag: the agent reads it from its node's WindowsProxyConfig, set %s there (%s)", s.Flag, s.Target, translate)
	case Ignored:
		return fmt.Errorf("--%s is a kube-proxy flag the agent does not need: %s", s.Flag, s.Note)
	}
	return fmt.Errorf("--%s is a kube-proxy flag without an equivalent in winproxy: %s", s.Flag, s.Note)
}
