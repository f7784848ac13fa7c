package daemon

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"

	"k8s.io/component-base/logs"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/winproxy/winproxy/api/v1alpha1"
	winproxyversion "github.com/winproxy/winproxy/internal/version"
	"github.com/winproxy/winproxy/internal/zpages"
)

// DebugOptions are what kube-proxy serves beside /metrics on its metrics port, which the agent
// serves on its own.
type DebugOptions struct {
	// Profiling serves Go's pprof under /debug/pprof/ and the log verbosity under /debug/flags/v,
	// as kube-proxy's --profiling does; off by default: a profile shows the process's inner state
	// and costs CPU.
	Profiling bool
	// Flags are the agent's flags with their values, for /flagz and /configz.
	Flags map[string]string
}

// ProxyMode is what /proxyMode answers: the mode Windows kube-proxy runs in, so that scripts
// that ask a node's proxy which mode it runs keep working.
const ProxyMode = "kernelspace"

// debugComponent names the agent on /flagz and /statusz.
const debugComponent = "winproxy-agent"

// serveDebug adds kube-proxy's debug endpoints to the metrics server: /healthz (the sync loop is
// not stuck), /proxyMode, /configz (the resolved WindowsProxyNode spec and the flags), /flagz,
// /statusz, and with Profiling pprof and the verbosity. Like kube-proxy's, they answer on the
// metrics address, by default the node's loopback.
func (a *agent) serveDebug(mgr manager.Manager) error {
	handlers := map[string]http.Handler{
		"/healthz":   http.StripPrefix("/healthz", &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping, "sync-loop": a.liveness}}),
		"/healthz/":  http.StripPrefix("/healthz", &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping, "sync-loop": a.liveness}}),
		"/proxyMode": http.HandlerFunc(proxyMode),
		"/configz":   http.HandlerFunc(a.configz),
	}
	if a.opts.Debug.Profiling {
		handlers["/debug/pprof/"] = http.HandlerFunc(pprof.Index)
		handlers["/debug/pprof/cmdline"] = http.HandlerFunc(pprof.Cmdline)
		handlers["/debug/pprof/profile"] = http.HandlerFunc(pprof.Profile)
		handlers["/debug/pprof/symbol"] = http.HandlerFunc(pprof.Symbol)
		handlers["/debug/pprof/trace"] = http.HandlerFunc(pprof.Trace)
		handlers["/debug/flags/v"] = http.HandlerFunc(verbosity)
	}
	// /flagz and /statusz in kube-proxy's formats (internal/zpages); /statusz lists the others.
	handlers["/flagz"] = zpages.FlagzHandler(debugComponent, a.opts.Debug.Flags)
	handlers["/statusz"] = zpages.StatuszHandler(debugComponent, winproxyversion.Version, append(slices.Collect(maps.Keys(handlers)), "/metrics", "/statusz"))
	for _, path := range slices.Sorted(maps.Keys(handlers)) {
		if err := mgr.AddMetricsServerExtraHandler(path, handlers[path]); err != nil {
			return fmt.Errorf("serving %s on the metrics address: %w", path, err)
		}
	}
	return nil
}

func proxyMode(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = io.WriteString(w, ProxyMode)
}

// Configz is what /configz shows: the settings in effect on the node, as kube-proxy's shows its
// KubeProxyConfiguration.
type Configz struct {
	// WindowsProxyNode is the node's WindowsProxyNode as the agent reads it (the config the
	// controller resolved for this node, with its hash and owner); nil before it exists.
	WindowsProxyNode *ConfigzNode `json:"windowsProxyNode"`
	// Flags are the agent's flags with their values.
	Flags map[string]string `json:"flags"`
}

// ConfigzNode is the part of a WindowsProxyNode that says which config is in effect.
type ConfigzNode struct {
	Name       string                        `json:"name"`
	Generation int64                         `json:"generation"`
	Config     string                        `json:"config,omitempty"`
	Spec       v1alpha1.WindowsProxyNodeSpec `json:"spec"`
}

func (a *agent) configz(w http.ResponseWriter, r *http.Request) {
	out := Configz{Flags: a.opts.Debug.Flags}
	wpn := &v1alpha1.WindowsProxyNode{}
	err := a.client.Get(r.Context(), client.ObjectKey{Name: a.opts.NodeName}, wpn)
	switch {
	case err == nil:
		out.WindowsProxyNode = &ConfigzNode{Name: wpn.Name, Generation: wpn.Generation, Spec: wpn.Spec}
		for _, o := range wpn.OwnerReferences {
			if o.Kind == "WindowsProxyConfig" && o.Controller != nil && *o.Controller {
				out.WindowsProxyNode.Config = o.Name
			}
		}
	case client.IgnoreNotFound(err) != nil:
		http.Error(w, "reading the WindowsProxyNode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
}

// verbosity is kube-proxy's /debug/flags/v: PUT a number to change the log verbosity.
func verbosity(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		http.Error(w, "PUT the verbosity, e.g. curl -X PUT -d 4 .../debug/flags/v", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 16))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	msg, err := logs.GlogSetter(strings.TrimSpace(string(body)))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_, _ = io.WriteString(w, msg)
}
