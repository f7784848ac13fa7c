package conformance

import (
	"slices"
	"strconv"
	"strings"
)

// difference is one entry of the allow-list: a way winproxy deliberately
// differs from upstream winkernel. Each is documented, with its reason and
// upstream's behaviour, in docs/differences-from-kube-proxy.md under the
// heading whose anchor is ID.
type difference struct {
	ID    string
	Title string
	// explains reports whether atom a (at the step x) is this difference.
	// Predicates are narrow on purpose: a broken engine rule must not find
	// shelter here.
	explains func(x *stepCtx, a *atom) bool
	// stateless differences hold between winproxy and upstream started
	// afresh, too: they are not upstream's history.
	stateless bool
}

// allowList is checked in order; an atom counts for the first entry that
// explains it. (Set in init: some predicates consult the list itself.)
var allowList []difference

func init() { allowList = differences() }

func differences() []difference {
	return []difference{
		{
			ID:    "dsr-requested-on-an-hns-without-dsr",
			Title: "DSR requested on an HNS without DSR",
			explains: func(x *stepCtx, a *atom) bool {
				c := x.o.c
				return a.Kind == atomError && x.o.UpErr == dsrUnsupported && c.EnableDSR && !c.Features.DSR
			},
		},
		{
			ID:    "session-affinity-needs-hns-120",
			Title: "Session affinity needs HNS 12.0",
			explains: func(x *stepCtx, a *atom) bool {
				return a.Kind == atomField && a.Field == "distribution" && a.Up == "2" && a.Win == "0" &&
					!x.o.c.Features.SessionAffinity
			},
			stateless: true,
		},
		{
			ID:    "ipv6-flag-on-ipv6-health-check-load-balancers",
			Title: "IPv6 flag on IPv6 health-check load balancers",
			explains: func(x *stepCtx, a *atom) bool {
				if a.Frontend.Family != "v6" || !x.hasRole(a.Frontend, "healthcheck") {
					return false
				}
				switch a.Kind {
				case atomField:
					up, err1 := strconv.Atoi(a.Up)
					win, err2 := strconv.Atoi(a.Win)
					return a.Field == "flags" && err1 == nil && err2 == nil && win == up|2 && up&2 == 0
				case atomLB:
					// Upstream loses it when the service is synced again.
					return a.Up == "" && x.winMatchesFresh(a.Frontend)
				}
				return false
			},
			stateless: true,
		},
		{
			ID:    "an-address-on-two-ports-is-one-backend",
			Title: "An address on two ports is one backend",
			explains: func(x *stepCtx, a *atom) bool {
				if a.Kind != atomBackend || a.Up == "" || a.Win != "" || strings.HasPrefix(a.Up, "gone ") {
					return false
				}
				up, win := x.up.LBs[a.Frontend], x.winLB(a.Frontend)
				if len(up) != 1 || win == nil {
					return false
				}
				n := 0
				for _, b := range up[0].Backends {
					if b == a.Up {
						n++
					}
				}
				return n > 1 && slices.Contains(win.Backends, a.Up)
			},
			stateless: true,
		},
		{
			ID:    "remote-endpoints-only-for-backends-a-load-balancer-uses",
			Title: "Remote endpoints only for backends a load balancer uses",
			explains: func(x *stepCtx, a *atom) bool {
				return a.Kind == atomRemote && a.Up != "" && a.Win == "" && x.addresses[a.IP] && !x.winUsesRemote(a.IP)
			},
		},
		{
			ID:    "no-remote-endpoints-leaked-across-a-restart",
			Title: "No remote endpoints leaked across a restart",
			explains: func(x *stepCtx, a *atom) bool {
				if a.Kind != atomRemote || a.Up == "" || a.Win != "" || x.addresses[a.IP] {
					return false
				}
				// Upstream had it when a new process started that never heard
				// of the address: nobody deletes it.
				for _, r := range x.restarts {
					if r > 0 && len(x.o.Up[r-1].Remote[a.IP]) > 0 && !x.listedAt[r][a.IP] {
						return true
					}
				}
				return false
			},
		},
		{
			ID:    "load-balancers-follow-a-recreated-local-endpoint",
			Title: "Load balancers follow a recreated local endpoint",
			explains: func(x *stepCtx, a *atom) bool {
				addr, ok := strings.CutPrefix(a.Up, "gone ")
				if a.Kind != atomBackend || !ok {
					return false
				}
				f := x.freshLB(a.Frontend)
				// Upstream afresh has no dangling backend, and has the new
				// endpoint exactly when winproxy has it.
				return f != nil && !slices.Contains(f.Backends, a.Up) && slices.Contains(f.Backends, addr) == (a.Win == addr)
			},
		},
		{
			ID:    "settings-of-a-shared-health-check-load-balancer",
			Title: "Settings of a shared health-check load balancer",
			explains: func(x *stepCtx, a *atom) bool {
				if a.Kind != atomField || (a.Field != "portFlags" && a.Field != "sourceVIP") || !x.sharedHC[a.Frontend] {
					return false
				}
				cands := x.healthCheckSettings(a.Frontend, a.Field)
				if !cands[a.Win] {
					return false
				}
				// Upstream took another sharer's settings (whichever service it
				// synced first), or kept those of a sharer that has left.
				f := x.freshLB(a.Frontend)
				return cands[a.Up] && len(cands) > 1 || f != nil && fieldValue(*f, a.Field) == a.Win
			},
			stateless: true,
		},
		{
			ID:    "source-vip-updated-when-its-rule-changes",
			Title: "Source VIP updated when its rule changes",
			explains: func(x *stepCtx, a *atom) bool {
				f := x.freshLB(a.Frontend)
				return a.Kind == atomField && a.Field == "sourceVIP" && f != nil && f.SourceVIP == a.Win
			},
		},
		{
			ID:    "external-load-balancers-removed-when-no-endpoint-is-available",
			Title: "External load balancers removed when no endpoint is available",
			explains: func(x *stepCtx, a *atom) bool {
				return a.Kind == atomLB && a.Win == "" && x.freshLB(a.Frontend) == nil && len(x.fresh().LBs[a.Frontend]) == 0 &&
					x.hasRole(a.Frontend, "nodeport", "externalip", "healthcheck")
			},
		},
		{
			ID:    "a-shared-health-check-load-balancer-stays-while-a-service-uses-it",
			Title: "A shared health-check load balancer stays while a service uses it",
			explains: func(x *stepCtx, a *atom) bool {
				return a.Kind == atomLB && a.Up == "" && x.sharedHC[a.Frontend] && x.hasRole(a.Frontend, "healthcheck") &&
					x.winMatchesFresh(a.Frontend)
			},
		},
		{
			ID:    "a-local-endpoint-is-used-once-its-hns-endpoint-exists",
			Title: "A local endpoint is used once its HNS endpoint exists",
			explains: func(x *stepCtx, a *atom) bool {
				f := x.freshLB(a.Frontend)
				if f == nil || a.Up != "" {
					return false
				}
				switch a.Kind {
				case atomBackend:
					// A local backend (no "remote"/"gone" prefix).
					return !strings.Contains(a.Win, " ") && x.cniCreated[a.Win] && slices.Contains(f.Backends, a.Win)
				case atomLB:
					// The LB's only backends were waiting for theirs.
					return slices.ContainsFunc(f.Backends, func(b string) bool { return x.cniCreated[b] }) && x.winMatchesFresh(a.Frontend)
				}
				return false
			},
		},
		{
			ID:    "topology-aware-routing",
			Title: "Topology-aware routing",
			explains: func(x *stepCtx, a *atom) bool {
				return a.Kind == atomBackend && a.Up != "" && a.Win == "" && x.topologyExcludes(a.Frontend, a.Up)
			},
			stateless: true,
		},
	}
}

// winUsesRemote reports whether one of winproxy's LBs has the remote
// endpoint of ip as a backend.
func (x *stepCtx) winUsesRemote(ip string) bool {
	for _, lbs := range x.win.LBs {
		for _, lb := range lbs {
			if slices.Contains(lb.Backends, "remote "+ip) {
				return true
			}
		}
	}
	return false
}

// healthCheckSettings are the values of a health-check LB's field that the
// services sharing its frontend would each give it: port flags from
// preserve-destination, the source VIP of the service port's other LBs.
func (x *stepCtx) healthCheckSettings(f Frontend, field string) map[string]bool {
	out := map[string]bool{}
	for _, r := range x.roles[f] {
		if r.Kind != "healthcheck" {
			continue
		}
		switch field {
		case "portFlags":
			pf := "0"
			if svc := x.services[r.Service]; svc.Annotations["preserve-destination"] == "true" && x.o.c.Features.DSR {
				pf = "12"
			}
			out[pf] = true
		case "sourceVIP":
			for g, rs := range x.roles {
				if g == f || !slices.ContainsFunc(rs, func(o role) bool { return o.Service == r.Service && o.Port == r.Port && o.Kind != "healthcheck" }) {
					continue
				}
				if lb := x.winLB(g); lb != nil {
					out[lb.SourceVIP] = true
					break
				}
			}
		}
	}
	return out
}
