package conformance

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/agent/apply"
	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/agent/ownership"
	"github.com/winproxy/winproxy/agent/syncmode"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/featuregate"
)

// syncsFromChanges counts the steps winproxy programmed from the engine's
// changes alone (Applier.ApplyChanges), as the agent's event-driven syncs
// do; the others took a full sync.
var syncsFromChanges atomic.Int64

// winproxyRun is winproxy's side of a cluster: the incremental engine
// and the applier on a simulated host, as the agent wires them. A
// restart replaces both (the host and the ledger file stay).
type winproxyRun struct {
	c    *Cluster
	cfg  v1alpha1.ResolvedProxyConfig
	node *corev1.Node // its zone label
	host *sim.Sim
	// client is host as the applier sees it: timed when measured.
	client hns.Client
	// measured: each step's Cost is measured, and the suite's own checks
	// (the engine against Compute, a second sync) are left out of it.
	measured bool
	inHost   time.Duration // time spent inside host, when measured
	ledger   *ownership.Ledger
	applier  *apply.Applier
	cache    *engine.Incremental
	services map[string]*corev1.Service
	slices   map[string]*discoveryv1.EndpointSlice
}

// runWinproxy runs c on winproxy. Besides the HNS state it checks, at
// every step, that the incremental engine agrees with Compute, unless the
// cluster asks for its cost (Cluster.Measure).
func runWinproxy(ctx context.Context, c *Cluster) (*Result, error) {
	v, err := parseVersion(c.HNSVersion)
	if err != nil {
		return nil, err
	}
	profile := sim.Profile{Name: "hns-" + c.HNSVersion, Version: v,
		// Releases before 2025 have the duplicate-IP quirk
		// (docs/design/dataplane.md#the-duplicate-ip-quirk).
		DuplicateIPQuirk: !v.AtLeast(hns.Version{Major: 15})}
	host, err := sim.New(sim.WithProfile(profile), sim.WithDeterministicIDs())
	if err != nil {
		return nil, err
	}
	n := hns.Network{Name: c.Network.Name, Type: hns.NetworkType(c.Network.Type)}
	for _, r := range c.Network.Routes {
		n.RemoteSubnetRoutes = append(n.RemoteSubnetRoutes, hns.RemoteSubnetRoute{
			DestinationPrefix: netip.MustParsePrefix(r.Prefix), ProviderAddress: netip.MustParseAddr(r.ProviderAddress), IsolationID: r.IsolationID})
	}
	if _, err := host.AddNetwork(n); err != nil {
		return nil, err
	}
	ledger, err := ownership.OpenLedger("")
	if err != nil {
		return nil, err
	}
	w := &winproxyRun{c: c, cfg: winproxyConfig(c), node: &corev1.Node{}, host: host, client: host, ledger: ledger,
		measured: c.Measure, services: map[string]*corev1.Service{}, slices: map[string]*discoveryv1.EndpointSlice{}}
	if c.Measure {
		w.client = timedClient{Client: host, in: &w.inHost}
	}
	w.node.Name = c.NodeName
	if c.Zone != "" {
		w.node.Labels = map[string]string{corev1.LabelTopologyZone: c.Zone}
	}
	for _, ep := range c.Endpoints {
		if err := w.addEndpoint(ep); err != nil {
			return nil, err
		}
	}
	w.start()
	res := &Result{Name: c.Name}
	for i := range c.Steps {
		sr, err := w.step(ctx, &c.Steps[i])
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		res.Steps = append(res.Steps, sr)
	}
	return res, nil
}

func parseVersion(s string) (hns.Version, error) {
	maj, min, ok := strings.Cut(s, ".")
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if !ok || err1 != nil || err2 != nil {
		return hns.Version{}, fmt.Errorf("bad HNS version %q", s)
	}
	return hns.Version{Major: a, Minor: b}, nil
}

// winproxyConfig is the WindowsProxyNode config equivalent to the
// cluster's kube-proxy flags.
func winproxyConfig(c *Cluster) v1alpha1.ResolvedProxyConfig {
	cfg := v1alpha1.ResolvedProxyConfig{
		Network:   v1alpha1.NetworkSpec{Name: c.Network.Name, Type: v1alpha1.NetworkTypeAuto},
		EnableDSR: c.EnableDSR,
		DualStack: len(c.Families) > 1,
		HealthCheck: v1alpha1.HealthCheckSpec{ForwardVIP: c.ForwardHealthCheckVIP,
			RootEndpointName: c.RootEndpointName, Port: int32(c.HealthzPort)},
		// The defaults on a node of upstream's version: hints are honoured,
		// for nodes too (docs/differences-from-kube-proxy.md#topology-aware-routing).
		TopologyAwareRouting: true,
		FeatureGates:         map[string]bool{featuregate.PreferSameTrafficDistribution: true},
	}
	for _, fam := range []string{"IPv4", "IPv6"} {
		if ip := c.NodeIPs[fam]; ip != "" {
			cfg.NodeIPs = append(cfg.NodeIPs, ip)
		}
	}
	if c.SourceVIP != "" {
		cfg.SourceVIP = &v1alpha1.ResolvedSourceVIP{Strategy: v1alpha1.SourceVIPStrategyStatic, Address: c.SourceVIP}
		if c.SourceVIPEndpoint != "" {
			cfg.SourceVIP = &v1alpha1.ResolvedSourceVIP{Strategy: v1alpha1.SourceVIPStrategyEndpoint, EndpointName: c.SourceVIPEndpoint}
		}
	}
	return cfg
}

func (w *winproxyRun) addEndpoint(ep LocalEndpoint) error {
	var ips []netip.Addr
	for _, s := range ep.IPs {
		ips = append(ips, netip.MustParseAddr(s))
	}
	_, err := w.host.AddLocalEndpoint(w.c.Network.Name, ep.Name, ips...)
	return err
}

// start is the agent process starting: a new applier on the same ledger and
// a new engine cache filled from the informers.
func (w *winproxyRun) start() {
	w.applier = apply.New(w.client, w.ledger)
	w.cache = engine.NewIncremental()
	for _, s := range w.services {
		w.cache.SetService(s)
	}
	for _, s := range w.slices {
		w.cache.SetEndpointSlice(s)
	}
}

func (w *winproxyRun) step(ctx context.Context, s *Step) (StepResult, error) {
	for _, name := range s.RemoveEndpoints {
		ep, err := w.host.GetEndpointByName(ctx, name)
		if err != nil {
			return StepResult{}, err
		}
		if err := w.host.RemoveEndpoint(ep.ID); err != nil {
			return StepResult{}, err
		}
	}
	for _, ep := range s.AddEndpoints {
		if err := w.addEndpoint(ep); err != nil {
			return StepResult{}, err
		}
	}
	var out apply.Outcome
	var mismatch string
	cost := w.measure(func() {
		w.deliver(s)
		if s.Restart {
			w.start()
		}
		out = w.sync(ctx, s, &mismatch)
	})
	res, err := out.Result, errors.Join(out.ReadErr, out.Err)
	if err != nil {
		return StepResult{}, err
	}
	if out.Decision.Step == syncmode.Changes {
		syncsFromChanges.Add(1)
	}
	if mismatch != "" {
		return StepResult{}, fmt.Errorf("the incremental engine differs from engine.Compute (-cache +compute):\n%s", mismatch)
	}
	// The simulated host refuses what a real one would; winproxy must
	// program everything it wants on it.
	if len(res.Failures) > 0 || res.Skipped != "" {
		return StepResult{}, fmt.Errorf("winproxy's sync failed on the simulated host (skipped %q): %v", res.Skipped, res.Failures)
	}
	if !w.measured {
		// Nothing changed: a second sync writes nothing (the README's
		// principles: an unchanged sync writes nothing).
		again, err := w.fullSync(ctx, w.desired)
		if err != nil {
			return StepResult{}, err
		}
		if n := again.WriteCount(); n > 0 {
			return StepResult{}, fmt.Errorf("winproxy's second sync without changes wrote to HNS: %v", again.Writes)
		}
	}
	r, err := w.dump()
	r.Cost = cost
	return r, err
}

// deliver passes a step's object changes to the engine's cache, as the
// agent's informers do.
func (w *winproxyRun) deliver(s *Step) {
	for _, svc := range s.Services {
		w.services[svc.Namespace+"/"+svc.Name] = svc
		w.cache.SetService(svc)
	}
	for _, k := range s.DeleteServices {
		delete(w.services, k)
		ns, name, _ := strings.Cut(k, "/")
		w.cache.DeleteService(ns, name)
	}
	for _, sl := range s.Slices {
		w.slices[sl.Namespace+"/"+sl.Name] = sl
		w.cache.SetEndpointSlice(sl)
	}
	for _, k := range s.DeleteSlices {
		delete(w.slices, k)
		ns, name, _ := strings.Cut(k, "/")
		w.cache.DeleteEndpointSlice(ns, name)
	}
}

// sync is the agent's sync after a step's changes. Unless measured, it
// sets *mismatch to how the incremental engine differs from Compute.
func (w *winproxyRun) sync(ctx context.Context, s *Step, mismatch *string) apply.Outcome {
	compute := func(v engine.HNSView) *engine.Desired {
		d := w.desired(v)
		if !w.measured {
			*mismatch = w.compareWithCompute(d, v)
		}
		return d
	}
	// As the agent syncs after a change of Services or EndpointSlices
	// (apply.Sync, which agent/syncmode decides): HNS checked this period,
	// so from the applier's model of HNS, only what the engine changed when
	// it can. Pods coming and going are the CNI's, which the agent's ID check
	// finds: those steps list, as the agent's sync after the check does.
	now := time.Now()
	agentSync := &apply.Sync{Applier: w.applier, Network: w.c.Network.Name, HostMAC: w.c.HostMAC, LastChecked: now, LastListed: now,
		Compute: func(v engine.HNSView) (*engine.Desired, engine.Changes) { return compute(v), w.cache.Changes() }}
	if s.Restart || len(s.AddEndpoints)+len(s.RemoveEndpoints) > 0 {
		agentSync.LastChecked, agentSync.LastListed = time.Time{}, time.Time{}
	}
	return agentSync.Run(ctx, now, time.Minute)
}

// desired is the incremental engine's result with HNS as v shows it, as the agent computes it.
func (w *winproxyRun) desired(v engine.HNSView) *engine.Desired {
	w.cache.SetNode(w.c.NodeName, w.cfg, w.node, v)
	return w.cache.Desired()
}

// fullSync is a sync of the agent's that lists HNS (agent/daemon program, when it observes):
// Observe, the engine's result for the view it read (desired), Apply.
func (w *winproxyRun) fullSync(ctx context.Context, desired func(engine.HNSView) *engine.Desired) (apply.Result, error) {
	o, err := w.applier.Observe(ctx, w.c.Network.Name, w.c.HostMAC)
	if err != nil {
		return apply.Result{}, err
	}
	return w.applier.Apply(ctx, o, desired(o.View))
}

// compareWithCompute checks the incremental engine's result against the engine as one
// pure function over the same inputs.
func (w *winproxyRun) compareWithCompute(d *engine.Desired, v engine.HNSView) string {
	in := engine.Input{NodeName: w.c.NodeName, Config: w.cfg, Node: w.node, HNS: v}
	for _, k := range sortedKeys(w.services) {
		in.Services = append(in.Services, w.services[k])
	}
	for _, k := range sortedKeys(w.slices) {
		in.EndpointSlices = append(in.EndpointSlices, w.slices[k])
	}
	full := engine.Compute(in)
	type view struct {
		LBs       []engine.LoadBalancer
		Remotes   []engine.RemoteEndpoint
		SourceVIP *engine.SourceVIPEndpoint
		Effective engine.Effective
		Problems  []engine.Problem
	}
	of := func(d *engine.Desired) view {
		return view{d.SortedLoadBalancers(), d.SortedRemoteEndpoints(), d.SourceVIPEndpoint, d.Effective, d.Problems()}
	}
	if reflect.DeepEqual(of(d), of(full)) {
		return ""
	}
	return cmp.Diff(of(d), of(full), cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
		cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }))
}

func (w *winproxyRun) dump() (StepResult, error) {
	st, err := w.host.Snapshot()
	if err != nil {
		return StepResult{}, err
	}
	var r StepResult
	for _, ep := range st.Endpoints {
		o := Endpoint{ID: ep.ID, Name: ep.Name, MAC: ep.MAC, Remote: ep.Remote}
		for _, ip := range ep.IPs {
			o.IPs = append(o.IPs, ip.String())
		}
		if ep.ProviderAddress.IsValid() {
			o.ProviderAddress = ep.ProviderAddress.String()
		}
		r.Endpoints = append(r.Endpoints, o)
	}
	for _, lb := range st.LoadBalancers {
		o := LoadBalancer{ID: lb.ID, Protocol: lb.PortMapping.Protocol, InternalPort: lb.PortMapping.InternalPort,
			ExternalPort: lb.PortMapping.ExternalPort, Distribution: uint32(lb.PortMapping.DistributionType),
			PortFlags: uint32(lb.PortMapping.Flags), Flags: uint32(lb.Flags), Endpoints: slices.Clone(lb.BackendEndpointIDs)}
		for _, v := range lb.FrontendVIPs {
			o.VIPs = append(o.VIPs, v.String())
		}
		if lb.SourceVIP.IsValid() {
			o.SourceVIP = lb.SourceVIP.String()
		}
		r.LoadBalancers = append(r.LoadBalancers, o)
	}
	return r, nil
}

func sortedKeys[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
