// Package daemon is the agent process: it watches only what one node needs (its own
// WindowsProxyNode, the Nodes, Services and EndpointSlices), recomputes the desired HNS state
// incrementally on change, applies it with the fewest HNS calls at a bounded rate, and reports what
// is in effect into WindowsProxyNode.status, writing only when something changed.
package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/winproxy/winproxy/agent/apply"
	"github.com/winproxy/winproxy/agent/engine"
	"github.com/winproxy/winproxy/agent/healthcheck"
	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/nodestatus"
	"github.com/winproxy/winproxy/agent/ownership"
	"github.com/winproxy/winproxy/agent/selectors"
	"github.com/winproxy/winproxy/agent/syncmode"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/nodeinfo"
)

// Options configure the agent.
type Options struct {
	// NodeName is the node this agent programs.
	NodeName string
	// HNS is the host's HNS (the Windows adapter or the simulator).
	HNS hns.Client
	// Ledger records which HNS objects this agent created.
	Ledger *ownership.Ledger
	// HostMAC returns the MAC of the host interface holding the node IP; overlay source-VIP and
	// service-VIP endpoints carry it. Empty when unknown.
	HostMAC func(nodeIP netip.Addr) string
	// WindowsBuild is reported in status, e.g. "20348".
	WindowsBuild string
	// MetricsAddr and HealthAddr are the bind addresses of /metrics and of the agent's own
	// /healthz (the sync loop is not stuck) and /readyz; "0" disables one.
	MetricsAddr, HealthAddr string
	// HealthzBindAddress is kube-proxy's --healthz-bind-address: the IP (and optionally the port)
	// of the proxy health server (/healthz, /livez) that load balancers probe; service health
	// servers listen on the same IP. Without a port the config's spec.healthCheck.port is used;
	// "" disables both.
	HealthzBindAddress string
	// HNSCallTimeout bounds every HNS call; 0 means no bound.
	HNSCallTimeout time.Duration
	// HeartbeatNamespace holds the node's heartbeat Lease, renewed every HeartbeatInterval while
	// the sync loop is healthy (v1alpha1.DefaultHeartbeatIntervalSeconds when 0).
	HeartbeatNamespace string
	HeartbeatInterval  time.Duration
	// Clock is the time source (tests use a fake one); nil means the real clock.
	Clock clock.Clock
	// Debug are kube-proxy's debug endpoints on the metrics address (debug.go).
	Debug DebugOptions
	// ClusterDNSService (namespace/name) is the cluster's DNS Service, which the first sync after
	// a start programs first (apply.WithClusterDNS); apply.DefaultClusterDNS when empty.
	ClusterDNSService string
}

// agent is one node's agent.
type agent struct {
	opts   Options
	log    logr.Logger
	client client.Client
	// reader reads past the cache, for a status write that met a newer object.
	reader  client.Reader
	events  recorder.EventRecorder
	metrics *Metrics
	applier *apply.Applier
	runner  *Runner

	// engine is owned by the sync goroutine; informer handlers queue their changes in pending,
	// so a long HNS apply never blocks them.
	engine    *engine.Incremental
	pendingMu sync.Mutex
	pending   []func(*engine.Incremental)
	// synced reports whether the Service and EndpointSlice handlers have seen the initial list.
	synced []toolscache.InformerSynced

	// ready turns true after the first successful sync; the readiness probe reads it.
	ready atomic.Bool
	// started turns true when the sync loop starts, once the caches are synced.
	started atomic.Bool

	health  *healthServers
	changes *changeTracker
	// statusMu serialises status writes: the sync loop and the heartbeat both write.
	statusMu sync.Mutex
	// unchanged is the last status build that found nothing to write, under statusMu.
	unchanged unchangedStatus
	// families are the IP families the last programming sync proxied; informer handlers read it.
	families atomic.Pointer[[]v1alpha1.IPFamily]
	// nodesChanged is set by the Node handler: the CNI's routes follow the Nodes, so the next sync
	// reads the network again (apply.Sync.NodesChanged).
	nodesChanged atomic.Bool

	// Only the sync goroutine touches these.
	notSelected bool
	reported    bool
	lastEffect  engine.Effective
	lastHealth  healthReport
	lastFailed  bool
	limiter     eventLimiter
	// syncer is how a sync reads HNS and programs it (syncmode), with when HNS was last checked.
	syncer apply.Sync
	// memory returns what a sync that allocated a collection cycle's worth freed.
	memory memoryReturner
	// mac is the host MAC the last lookup found (hostMAC).
	mac macLookup
	// reads are what a sync reads its WindowsProxyNode and Node into: the cache hands out a copy
	// of its object's fields (UnsafeDisableDeepCopy), and into new objects that was 2 KB an event.
	// Nothing of a sync keeps them: the engine copies what it reads of the Node, a status write
	// patches a deep copy, Events take a reference.
	reads struct {
		wpn  v1alpha1.WindowsProxyNode
		node corev1.Node
	}
}

// Run runs the agent until ctx is done. HNS is left as it is on return.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	if opts.NodeName == "" {
		return errors.New("the node name is required (--node-name or NODE_NAME)")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	hzHost, hzPort, hzDisabled, err := parseHealthzBindAddress(opts.HealthzBindAddress)
	if err != nil {
		return err
	}
	mgr, err := newManager(cfg, opts)
	if err != nil {
		return err
	}
	a := newAgent(mgr, opts, hzHost, hzPort, hzDisabled)
	if err := a.watch(ctx, mgr.GetCache()); err != nil {
		return err
	}
	if err := a.serveDebug(mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("sync-loop", a.liveness); err != nil {
		return err
	}
	// The heartbeat starts with the process, not after the caches sync: a slow start is progress.
	if err := mgr.Add(manager.RunnableFunc(a.heartbeat(mgr.GetClient()).run)); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("first-sync", a.readyCheck); err != nil {
		return err
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		// No HNS work before every watched kind has been listed once and every object of the
		// initial lists has reached the handlers: computing from a partial set of Services would
		// delete the load balancers of the missing ones.
		if !mgr.GetCache().WaitForCacheSync(ctx) || !toolscache.WaitForCacheSync(ctx.Done(), a.synced...) {
			return ctx.Err()
		}
		a.log.Info("Caches synced, starting to sync HNS")
		defer a.health.close()
		a.started.Store(true)
		a.runner.Run(ctx, a.sync)
		return nil
	})); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// newManager is the agent's controller-runtime manager: metrics and probes, and a cache of only
// what the agent reads.
func newManager(cfg *rest.Config, opts Options) (manager.Manager, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress: opts.HealthAddr,
		// The agent reads only its own Lease, and only when a write of it failed: no informer
		// (nor the RBAC to list every Lease) for that.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&coordinationv1.Lease{}}}},
		Cache: cache.Options{
			// Managed fields are never read and are often the bigger half of an object.
			DefaultTransform: cache.TransformStripManagedFields(),
			NewInformer:      newInformer,
			ByObject: map[client.Object]cache.ByObject{
				// The agent may only read its own WindowsProxyNode; watching just that one also keeps
				// a 1,000-node cluster from fanning every node's status out to every agent.
				//
				// Each sync reads it and this Node from the cache without a copy (UnsafeDisableDeepCopy):
				// the agent never changes what it reads (a status write patches a copy), and the two
				// copies were 4 % of its CPU per EndpointSlice event.
				&v1alpha1.WindowsProxyNode{}: {Field: fields.OneTermEqualSelector("metadata.name", opts.NodeName), UnsafeDisableDeepCopy: ptr.To(true)},
				// The Services and EndpointSlices kube-proxy skips, filtered by the apiserver as
				// kube-proxy does: those another proxy implements, headless ones (DNS serves them).
				// Every other one of the cluster is cached, and every Node, with only what the
				// agent reads of them (slim.go); the Services and slices in the engine's form, which
				// the manager's client cannot Get or List (cachedService, cachedSlice).
				&corev1.Service{}:            {Label: selectors.ServiceLabels, Field: selectors.ServiceFields, Transform: slimService},
				&discoveryv1.EndpointSlice{}: {Label: selectors.EndpointSliceLabels, Transform: slimSlice},
				&corev1.Node{}:               {Transform: slimNode, UnsafeDisableDeepCopy: ptr.To(true)},
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	return mgr, nil
}

// newInformer makes the agent's informers without the namespace index controller-runtime asks
// for: the agent looks each cached object up by name and lists none by namespace (a List with a
// namespace fails, naming the missing index), and the index is a set of every Service's and
// slice's key, about 1 MB at 10k Services, updated at every event.
func newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, _ toolscache.Indexers) toolscache.SharedIndexInformer {
	return toolscache.NewSharedIndexInformer(lw, obj, resync, toolscache.Indexers{})
}

// newAgent wires the agent: its engine, runner, health servers and the applier on HNS, with
// timeouts inside and counting outside.
func newAgent(mgr manager.Manager, opts Options, hzHost string, hzPort int, hzDisabled bool) *agent {
	a := &agent{
		opts:    opts,
		log:     ctrl.Log.WithName("agent").WithValues("node", opts.NodeName),
		client:  mgr.GetClient(),
		reader:  mgr.GetAPIReader(),
		events:  mgr.GetEventRecorder("winproxy-agent"),
		metrics: NewMetrics(crmetrics.Registry),
		engine:  engine.NewIncremental(),
		runner:  NewRunner(opts.Clock, time.Second, 30*time.Second),
	}
	a.changes = newChangeTracker(opts.Clock.Now(), a.metrics.KubeProxy)
	proxyHealth := healthcheck.NewProxyHealth(opts.Clock, 2*30*time.Second, a.thisNode)
	a.health = &healthServers{
		host: unspecifiedHost(hzHost), port: hzPort, disabled: hzDisabled,
		proxy: proxyHealth,
		server: healthcheck.NewServer(proxyHealth.Handler(func(path string, code int) {
			counter := a.metrics.KubeProxy.ProxyHealthzTotal
			if path == "livez" {
				counter = a.metrics.KubeProxy.ProxyLivezTotal
			}
			counter.WithLabelValues(strconv.Itoa(code)).Inc()
		})),
		services: healthcheck.NewServices(unspecifiedHost(hzHost), func() bool { return proxyHealth.Health().Healthy }),
	}
	// Timeouts inside, counting outside: a call that timed out is counted with result "timeout",
	// and only calls that returned count as progress of the sync loop.
	a.applier = apply.New(instrumented{Client: hns.WithTimeout(opts.HNS, opts.HNSCallTimeout), calls: a.metrics.HNSCalls, alive: a.runner.Progress}, opts.Ledger,
		apply.WithClusterDNS(cmp.Or(opts.ClusterDNSService, apply.DefaultClusterDNS)))
	a.syncer.Applier = a.applier
	return a
}

func (a *agent) readyCheck(*http.Request) error {
	if !a.ready.Load() {
		return errors.New("no successful sync yet")
	}
	return nil
}

// watch feeds informer events into the incremental engine and triggers a sync. Services and slices go
// into the engine as they change, so a sync recomputes only the services that changed.
func (a *agent) watch(ctx context.Context, c cache.Cache) error {
	handlers := []struct {
		obj client.Object
		set func(*engine.Incremental, metav1.Object)
		del func(*engine.Incremental, metav1.Object)
		// relevant filters updates; nil means every update matters.
		relevant func(old, new any) bool
	}{
		{&corev1.Service{},
			func(c *engine.Incremental, o metav1.Object) { c.SetServiceForm(o.(*cachedService).svc) },
			func(c *engine.Incremental, o metav1.Object) { c.DeleteService(o.GetNamespace(), o.GetName()) }, serviceChanged},
		// The informer stores Services and slices in the engine's form (cachedService, cachedSlice).
		{&discoveryv1.EndpointSlice{},
			func(c *engine.Incremental, o metav1.Object) { c.SetSlice(o.(*cachedSlice).slice) },
			func(c *engine.Incremental, o metav1.Object) { c.DeleteEndpointSlice(o.GetNamespace(), o.GetName()) }, sliceChanged},
		// The engine keeps the Nodes' pod CIDRs: a sync lists no Node.
		{&corev1.Node{},
			func(c *engine.Incremental, o metav1.Object) { c.SetClusterNode(o.(*corev1.Node)) },
			func(c *engine.Incremental, o metav1.Object) { c.DeleteClusterNode(o.GetName()) }, nodeChanged},
		// The WindowsProxyNode is read at sync time; its events only trigger it.
		// The agent's own status writes need no sync: only a new spec does, or the controller
		// saying the agent was silent (its report is then rewritten at once).
		{&v1alpha1.WindowsProxyNode{}, nil, nil, specOrAliveChanged},
	}
	for _, h := range handlers {
		inf, err := c.GetInformer(ctx, h.obj)
		if err != nil {
			return fmt.Errorf("watching %T: %w", h.obj, err)
		}
		set, del, relevant := h.set, h.del, h.relevant
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(o any) { a.changed(o, set, false) },
			UpdateFunc: func(old, o any) {
				if relevant == nil || relevant(old, o) {
					a.changed(o, set, false)
				} else {
					a.changes.unchanged(o)
				}
			},
			DeleteFunc: func(o any) {
				if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
					o = t.Obj
				}
				a.changed(o, del, true)
			},
		})
		if err != nil {
			return err
		}
		if set != nil {
			a.synced = append(a.synced, reg.HasSynced)
		}
	}
	return nil
}

// serviceChanged passes the Service updates that change what the engine reads: a new status
// condition, label or selector, or any annotation but the two winkernel reads, needs no sync.
// kube-proxy drops them too (pkg/proxy/servicechangetracker.go compares the ports it derives).
func serviceChanged(old, new any) bool {
	o, ok1 := old.(*cachedService)
	n, ok2 := new.(*cachedService)
	return !ok1 || !ok2 || !reflect.DeepEqual(o.svc, n.svc)
}

// sliceChanged passes the EndpointSlice updates that change what the engine reads: a new label or
// annotation, or a new trigger time over the same endpoints, needs no sync. kube-proxy drops them
// too, and records no trigger time for them (pkg/proxy/endpointschangetracker.go). The
// EndpointSlice controller copies a Service's labels to its slices, so a label change of a Service
// (a chart's new version label) updates every slice of it.
func sliceChanged(old, new any) bool {
	o, ok1 := old.(*cachedSlice)
	n, ok2 := new.(*cachedSlice)
	return !ok1 || !ok2 || !o.slice.Equal(n.slice)
}

// nodeChanged ignores node heartbeats: only addresses, pod CIDRs and labels feed the engine
// (nodeinfo.AgentInputsChanged). In a large cluster every node's status is updated every few
// seconds.
func nodeChanged(old, new any) bool {
	o, ok1 := old.(*corev1.Node)
	n, ok2 := new.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return nodeinfo.AgentInputsChanged(o, n)
}

// specOrAliveChanged passes spec changes of the WindowsProxyNode and the controller's changes of
// AgentAlive, not the agent's own status writes.
func specOrAliveChanged(old, new any) bool {
	o, ok1 := old.(*v1alpha1.WindowsProxyNode)
	n, ok2 := new.(*v1alpha1.WindowsProxyNode)
	if !ok1 || !ok2 || o.Generation != n.Generation {
		return true
	}
	oa := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionAgentAlive)
	na := meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionAgentAlive)
	return (oa == nil) != (na == nil) || oa != nil && (oa.Status != na.Status || oa.Reason != na.Reason)
}

// changed queues an object's change for the engine cache and triggers a sync. The proxy health
// server counts from the oldest queued change how long the node has been behind.
func (a *agent) changed(o any, apply func(*engine.Incremental, metav1.Object), deleted bool) {
	if obj, ok := o.(metav1.Object); ok && apply != nil {
		a.changes.observe(obj, deleted)
		a.pendingMu.Lock()
		a.pending = append(a.pending, func(c *engine.Incremental) { apply(c, obj) })
		a.pendingMu.Unlock()
	}
	if _, node := o.(*corev1.Node); node {
		a.nodesChanged.Store(true)
	}
	a.health.proxy.QueuedUpdate()
	for _, fam := range a.programmedFamilies() {
		a.metrics.KubeProxy.SyncProxyRulesLastQueuedTimestamp.WithLabelValues(string(fam)).Set(float64(a.opts.Clock.Now().Unix()))
	}
	if _, spec := o.(*v1alpha1.WindowsProxyNode); spec {
		// A new spec may change the pacing itself; the old pacing must not hold it back.
		a.runner.TriggerNow()
		return
	}
	a.runner.Trigger()
}

func (a *agent) programmedFamilies() []v1alpha1.IPFamily {
	if f := a.families.Load(); f != nil {
		return *f
	}
	return nil
}

// drainPending applies the queued changes to the engine cache, in arrival order.
func (a *agent) drainPending() {
	a.pendingMu.Lock()
	pending := a.pending
	a.pending = nil
	a.pendingMu.Unlock()
	for _, apply := range pending {
		apply(a.engine)
	}
	a.changes.drained()
}

// sync is one round: read the config and HNS, compute, apply, report. Its error only paces
// retries; everything worth knowing is in the status, events and metrics.
func (a *agent) sync(ctx context.Context) error {
	start := a.opts.Clock.Now()
	a.memory.beforeSync()
	defer func() {
		if a.memory.afterSync() {
			a.log.V(2).Info("Returned the memory the sync freed to the system")
		}
	}()
	// Reads come from the informer cache; the bound matters for the status write, which goes to
	// the apiserver and must not hold up the next sync (a drift repair) when the apiserver is slow.
	apiCtx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	wpn := &a.reads.wpn
	if err := a.client.Get(apiCtx, client.ObjectKey{Name: a.opts.NodeName}, wpn); err != nil {
		if apierrors.IsNotFound(err) {
			// The engine cache holds one copy of each object; the queue holds every change.
			// An unselected agent programs nothing, but must not keep the history.
			a.drainPending()
			a.unselected(apiCtx)
			return nil
		}
		return err
	}
	if a.notSelected {
		a.log.Info("WindowsProxyNode appeared, programming HNS again")
		a.notSelected = false
	}
	cfg := wpn.Spec.Proxy
	period := time.Duration(cfg.Sync.PeriodSeconds) * time.Second
	a.runner.SetPeriods(time.Duration(cfg.Sync.MinPeriodSeconds)*time.Second, period)
	_, period = a.runner.periods()
	// kube-proxy's health timeout: two sync periods.
	a.health.proxy.SetTimeout(2 * period)

	node := &a.reads.node
	if err := a.client.Get(apiCtx, client.ObjectKey{Name: a.opts.NodeName}, node); err != nil {
		return fmt.Errorf("reading this node: %w", err)
	}

	report := syncReport{windows: a.opts.WindowsBuild}
	// Changes reach the engine whether or not HNS answers: service health checks report
	// endpoints, which do not depend on HNS.
	a.drainPending()
	syncErr := a.program(ctx, cfg, node, period, &report)
	if d, ok := a.applier.NextRetry(); ok {
		a.runner.RetryIn(d)
	}
	report.health = a.health.sync(cfg, a.engine.HealthCheckChanges())
	report.finished = a.opts.Clock.Now()
	report.duration = report.finished.Sub(start)
	a.metrics.SyncDuration.Observe(report.duration.Seconds())
	if syncErr == nil && report.effective.Programmable {
		a.programmed(report)
	}

	if err := a.report(apiCtx, wpn, report); err != nil {
		return err
	}
	// Ready means this agent reaches HNS and programs it; a load balancer that fails is the
	// status's business, not a reason to hold back a DaemonSet rollout.
	a.ready.Store(syncErr == nil)
	return syncErr
}

// program brings the engine's result up to date and programs it, the way syncmode decides: from
// the applier's model of HNS when it can be trusted (only what changed, or everything from what it
// recalls), else from a list. An error before anything was applied (HNS not answering) skips the
// sync.
func (a *agent) program(ctx context.Context, cfg v1alpha1.ResolvedProxyConfig, node *corev1.Node, period time.Duration, report *syncReport) error {
	a.syncer.Network, a.syncer.HostMAC = cfg.Network.Name, a.hostMAC(cfg, node, period)
	a.syncer.NodesChanged = a.nodesChanged.Swap(false) || a.syncer.NodesChanged
	a.syncer.Compute = func(view engine.HNSView) (*engine.Desired, engine.Changes) {
		a.engine.SetNode(a.opts.NodeName, cfg, node, view)
		return a.engine.Desired(), a.engine.Changes()
	}
	out := a.syncer.Run(ctx, a.opts.Clock.Now(), period)
	a.log.V(4).Info("Sync decided", "step", out.Decision.Step, "reason", out.Decision.Reason)
	report.decision = out.Decision
	if out.ReadErr != nil {
		return a.skipped(report, out.ReadErr)
	}
	a.record(report, out.Desired, out.Result, out.Err)
	return out.Err
}

// skipped records a sync that programmed nothing because HNS could not be read.
func (a *agent) skipped(report *syncReport, err error) error {
	report.hnsErr = err
	a.metrics.Syncs.WithLabelValues("skipped", string(report.decision.Step), string(report.decision.Reason)).Inc()
	return err
}

// record puts what a sync computed and programmed in its report and metrics.
func (a *agent) record(report *syncReport, desired *engine.Desired, r apply.Result, err error) {
	report.effective = desired.Effective
	a.metrics.observeEffective(desired.Effective)
	report.problems = desired.Problems()
	report.version = a.applier.Version()
	report.result = r
	if err != nil {
		// The sync stopped part-way (e.g. HNS went away): report what was known before rather
		// than counts of a sync that did not finish.
		report.hnsErr = err
	}
	a.observeResult(report.decision, r, err)
}

// apiTimeout bounds the API calls of one sync.
const apiTimeout = 15 * time.Second

// programmed records a sync that brought HNS up to date: the proxy health server turns healthy and
// kube-proxy's sync SLIs move, per IP family in effect.
func (a *agent) programmed(r syncReport) {
	fams := r.effective.IPFamilies
	a.families.Store(&fams)
	a.health.proxy.Updated(coreFamilies(fams))
	for _, fam := range fams {
		a.metrics.KubeProxy.SyncProxyRulesLatency.WithLabelValues(string(fam)).Observe(r.duration.Seconds())
		a.metrics.KubeProxy.SyncProxyRulesLastTimestamp.WithLabelValues(string(fam)).Set(float64(r.finished.Unix()))
	}
	a.changes.programmed(r.finished, fams)
}

func (a *agent) observeResult(d syncmode.Decision, r apply.Result, err error) {
	result := "success"
	switch {
	case err != nil || r.LBsFailed > 0:
		result = "failed"
	case r.Skipped != "":
		result = "skipped"
	}
	a.metrics.Syncs.WithLabelValues(result, string(d.Step), string(d.Reason)).Inc()
	a.metrics.LoadBalancers.WithLabelValues("desired").Set(float64(r.LBsDesired))
	a.metrics.LoadBalancers.WithLabelValues("programmed").Set(float64(r.LBsProgrammed))
	a.metrics.LoadBalancers.WithLabelValues("failed").Set(float64(r.LBsFailed))
	a.metrics.RemoteEndpoints.Set(float64(r.RemoteEndpoints))
	a.metrics.DriftRepairs.WithLabelValues("loadbalancer").Add(float64(r.DriftRepairs.LoadBalancers))
	a.metrics.DriftRepairs.WithLabelValues("endpoint").Add(float64(r.DriftRepairs.Endpoints))
	a.metrics.ForeignReplacement.Add(float64(len(r.ForeignReplaced)))
	a.metrics.Disowned.Add(float64(len(r.Disowned)))
	for _, f := range r.LBFailures {
		a.metrics.KubeProxy.countLBFailure(f)
	}
}

// unselected handles a missing WindowsProxyNode: the node is no longer selected by any config (or
// not yet). HNS is left exactly as it is; removing what the agent owns is `winproxy-agent cleanup`.
func (a *agent) unselected(ctx context.Context) {
	if a.notSelected {
		return
	}
	a.notSelected = true
	a.ready.Store(true)
	a.log.Info("No WindowsProxyNode for this node; leaving HNS as it is (run 'winproxy-agent cleanup' to remove what this agent programmed)")
	node := &corev1.Node{}
	if err := a.client.Get(ctx, client.ObjectKey{Name: a.opts.NodeName}, node); err == nil {
		a.events.Eventf(node, nil, corev1.EventTypeWarning, v1alpha1.ReasonNodeNotSelected, "Sync",
			"No WindowsProxyConfig selects this node; winproxy-agent stopped changing HNS and left the programmed load balancers in place")
	}
}

// report writes the status when it changed and records events for what an admin must know.
func (a *agent) report(ctx context.Context, wpn *v1alpha1.WindowsProxyNode, r syncReport) error {
	a.emitEvents(wpn, r)
	inputs := nodestatus.Inputs(r.sync())
	return a.writeStatus(ctx, wpn, &inputs, func(w *v1alpha1.WindowsProxyNode) v1alpha1.WindowsProxyNodeStatus {
		return buildStatus(w.Status, w, r)
	})
}
