// Package controllers holds the cluster-side reconciler of winproxy: it resolves each
// WindowsProxyConfig per selected Windows node into a WindowsProxyNode, rolls new configs out at a
// bounded pace and aggregates what the nodes' agents report into the config's status.
package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/configevents"
	"github.com/winproxy/winproxy/controllers/configstatus"
	"github.com/winproxy/winproxy/controllers/drift"
	"github.com/winproxy/winproxy/controllers/handover"
	"github.com/winproxy/winproxy/controllers/recent"
	"github.com/winproxy/winproxy/controllers/rollback"
	"github.com/winproxy/winproxy/controllers/rollout"
	"github.com/winproxy/winproxy/controllers/selection"
	"github.com/winproxy/winproxy/internal/resolve"
)

const (
	// UpdatedAtAnnotation on a WindowsProxyNode records when its spec.hash last changed: the start
	// of its progress deadline. It lives on the object so that a restarted controller measures
	// the same deadline.
	UpdatedAtAnnotation = "winproxy.io/updated-at"

	controllerName = "windowsproxyconfig"
)

// WindowsProxyConfigReconciler reconciles WindowsProxyConfigs into WindowsProxyNodes.
type WindowsProxyConfigReconciler struct {
	client client.Client
	// configs reads WindowsProxyConfigs as unstructured objects (see configs.go); the manager's
	// cache once SetupWithManager ran.
	configs  client.Reader
	recorder events.EventRecorder
	clock    clock.PassiveClock
	failures configevents.NodeFailures
	// recentNodes and recentConfigs hold the objects this controller wrote until the cache
	// shows them.
	recentNodes   *recent.Writes[*winproxyv1alpha1.WindowsProxyNode]
	recentConfigs *recent.Writes[*winproxyv1alpha1.WindowsProxyConfig]
	// matched knows the WindowsProxyNode specs that match their hash.
	matched drift.Checker
}

var _ reconcile.Reconciler = (*WindowsProxyConfigReconciler)(nil)

// Option configures a WindowsProxyConfigReconciler.
type Option func(*WindowsProxyConfigReconciler)

// WithClock replaces the wall clock, for tests of progress deadlines and of the writes that stand
// in for the cache.
func WithClock(c clock.PassiveClock) Option {
	return func(r *WindowsProxyConfigReconciler) { r.clock = c }
}

// NewWindowsProxyConfigReconciler returns a reconciler that reads through c (a cached client:
// every reconcile lists all configs, nodes and WindowsProxyNodes) and reports through recorder.
func NewWindowsProxyConfigReconciler(c client.Client, recorder events.EventRecorder, opts ...Option) *WindowsProxyConfigReconciler {
	r := &WindowsProxyConfigReconciler{client: c, configs: c, recorder: recorder, clock: clock.RealClock{}}
	for _, o := range opts {
		o(r)
	}
	r.recentNodes = recent.NewWrites[*winproxyv1alpha1.WindowsProxyNode](r.clock)
	r.recentConfigs = recent.NewWrites[*winproxyv1alpha1.WindowsProxyConfig](r.clock)
	return r
}

// SetupWithManager registers the reconciler. Every config is enqueued on a change of any config
// or relevant Node change, because node ownership depends on all configs at once (the oldest
// selecting config wins); this stays cheap because each reconcile only reads the cache and
// writes what changed.
func (r *WindowsProxyConfigReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := IndexFields(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	r.configs = mgr.GetCache()
	return ctrl.NewControllerManagedBy(mgr).
		For(newConfigObject(), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&winproxyv1alpha1.WindowsProxyNode{}, handler.EnqueueRequestsFromMapFunc(configsOf)).
		Watches(newConfigObject(), handler.EnqueueRequestsFromMapFunc(r.allConfigs), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.allConfigs), builder.WithPredicates(nodeChanged)).
		Named(controllerName).
		Complete(r)
}

// configsOf are the configs a WindowsProxyNode concerns: the one its spec names, also when that
// config does not exist (so that an orphan is taken over or deleted), and its standby owners (so
// that they notice a change of the nodes they wait for).
func configsOf(_ context.Context, o client.Object) []reconcile.Request {
	w := o.(*winproxyv1alpha1.WindowsProxyNode)
	out := []reconcile.Request{{NamespacedName: client.ObjectKey{Name: w.Spec.ConfigName}}}
	for _, ref := range w.OwnerReferences {
		if ref.Kind == configGVK.Kind && ref.APIVersion == configGVK.GroupVersion().String() && ref.Name != w.Spec.ConfigName {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: ref.Name}})
		}
	}
	return out
}

func (r *WindowsProxyConfigReconciler) allConfigs(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(configGVK.GroupVersion().WithKind("WindowsProxyConfigList"))
	if err := r.configs.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing WindowsProxyConfigs to enqueue failed")
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKey{Name: list.Items[i].GetName()}}
	}
	return out
}

// scope is what one reconcile read and decided.
type scope struct {
	config *winproxyv1alpha1.WindowsProxyConfig
	before *winproxyv1alpha1.WindowsProxyConfig

	// selected is true once the nodes were read: from then on the status can be computed.
	selected bool
	// selectorErr is set when spec.nodeSelector is invalid: owned are then the nodes the config
	// holds, and nothing is written.
	selectorErr error
	owned       []*corev1.Node
	conflicts   []selection.Conflict
	// takenOver are nodes of this config's WindowsProxyNodes that another config owns now: that
	// config moves them at its own rollout pace, so they are not deleted here.
	takenOver map[string]bool
	// standby are the WindowsProxyNodes of nodes this config claims and an older config holds,
	// which do not list this config as an owner yet; unstandby those that list it but whose node
	// it no longer claims (see package handover).
	standby, unstandby []*winproxyv1alpha1.WindowsProxyNode
	// wpns are this config's WindowsProxyNodes and those named after its nodes, by name; they
	// are cache objects and must not be mutated.
	wpns map[string]*winproxyv1alpha1.WindowsProxyNode
	// resolved is the spec resolved for each owned node; target is what the rollout moves the
	// nodes to: resolved, or during a rollback the last good spec resolved for each node.
	resolved, target map[string]resolution
	// rollback is the rollback in effect (see package rollback), nil when the spec is rolled out.
	rollback *winproxyv1alpha1.RollbackStatus
	plan     rollout.Plan
}

type resolution struct {
	proxy winproxyv1alpha1.ResolvedProxyConfig
	hash  string
	err   *resolve.Error
}

// +kubebuilder:rbac:groups=winproxy.io,resources=windowsproxyconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=winproxy.io,resources=windowsproxyconfigs/status,verbs=get;patch
// +kubebuilder:rbac:groups=winproxy.io,resources=windowsproxyconfigs/finalizers,verbs=update
// +kubebuilder:rbac:groups=winproxy.io,resources=windowsproxynodes,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// The controller only patches: no update verbs. windowsproxyconfigs/finalizers lets the
// WindowsProxyNodes' owner references set blockOwnerDeletion where the apiserver enforces it.

// Reconcile brings a config's WindowsProxyNodes one rollout step closer to the config and
// writes its status once, at the end, only if it changed.
func (r *WindowsProxyConfigReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	u := newConfigObject()
	if err := r.configs.Get(ctx, req.NamespacedName, u); err != nil {
		if apierrors.IsNotFound(err) {
			r.recentConfigs.Forget(req.Name)
			r.failures.Forget(req.Name)
			return ctrl.Result{}, r.reconcileDelete(ctx, req.Name)
		}
		return ctrl.Result{}, err
	}
	cfg, err := decodeConfig(u)
	if err != nil {
		return ctrl.Result{}, r.reportInvalidSpec(ctx, u, err)
	}
	if fresh, ok := r.recentConfigs.Fresh(cfg); ok {
		cfg = fresh.DeepCopy()
	}
	s := &scope{config: cfg, before: cfg.DeepCopy()}
	defer func() {
		if err := r.patchStatus(ctx, s, reterr == nil); err != nil {
			reterr = errors.Join(reterr, err)
		}
	}()
	if err := r.reconcileSelection(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	r.resolveNodes(ctx, s)
	if err := r.reconcileNodes(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: s.plan.RequeueAfter}, nil
}

// reconcileSelection reads the nodes this config owns and those an older config took.
func (r *WindowsProxyConfigReconciler) reconcileSelection(ctx context.Context, s *scope) error {
	configs, unreadable, err := r.readConfigs(ctx)
	if err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := r.client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing Nodes: %w", err)
	}
	var wpns winproxyv1alpha1.WindowsProxyNodeList
	if err := r.client.List(ctx, &wpns, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing WindowsProxyNodes: %w", err)
	}
	all := make(map[string]*winproxyv1alpha1.WindowsProxyNode, len(wpns.Items))
	for i := range wpns.Items {
		all[wpns.Items[i].Name] = &wpns.Items[i]
	}
	r.recentNodes.Freshen(all)
	holders := make(map[string]string, len(all))
	for name, w := range all {
		holders[name] = w.Spec.ConfigName
	}
	_, s.selectorErr = selection.Selector(s.config)
	sorted := selection.Claimants(configs, unreadable, holders)
	s.owned, s.conflicts = selection.Partition(s.config.Name, nodes.Items, sorted)
	owned := make(map[string]bool, len(s.owned))
	for _, n := range s.owned {
		owned[n.Name] = true
	}
	s.takenOver = map[string]bool{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if holders[n.Name] == s.config.Name && !owned[n.Name] && selection.Owner(n, sorted) != "" {
			s.takenOver[n.Name] = true
		}
	}
	s.wpns = make(map[string]*winproxyv1alpha1.WindowsProxyNode, len(s.owned))
	for name, w := range all {
		if w.Spec.ConfigName == s.config.Name || owned[name] {
			s.wpns[name] = w
		}
	}
	s.standby, s.unstandby = handover.StandbyChanges(s.config, all, s.owned, s.conflicts)
	s.selected = true
	return nil
}

// resolveNodes computes each owned node's config, and the config it is to run: the last good one
// while the spec is rolled back.
func (r *WindowsProxyConfigReconciler) resolveNodes(ctx context.Context, s *scope) {
	s.resolved = r.resolveAll(ctx, &s.config.Spec, s.owned)
	s.target = s.resolved
	if s.rollback = rollback.Active(s.config); s.rollback != nil {
		s.target = r.resolveAll(ctx, &s.config.Status.LastGood.Spec, s.owned)
	}
}

// resolveAll resolves spec for each of nodes.
func (r *WindowsProxyConfigReconciler) resolveAll(ctx context.Context, spec *winproxyv1alpha1.WindowsProxyConfigSpec, nodes []*corev1.Node) map[string]resolution {
	out := make(map[string]resolution, len(nodes))
	holder := resolve.WithAddressHolder(r.addressHolder(ctx))
	for _, n := range nodes {
		proxy, err := resolve.Resolve(spec, n, holder)
		if err != nil {
			out[n.Name] = resolution{err: err}
			continue
		}
		out[n.Name] = resolution{proxy: proxy, hash: resolve.Hash(&proxy)}
	}
	return out
}

// reconcileNodes takes one rollout step and deletes the WindowsProxyNodes of nodes nobody owns any
// more. An invalid selector changes nothing: bad input never removes a working config. When nodes
// failed the spec and autoRollback is on, it decides the rollback instead and changes nothing yet.
func (r *WindowsProxyConfigReconciler) reconcileNodes(ctx context.Context, s *scope) error {
	if s.selectorErr != nil {
		return nil
	}
	now := r.clock.Now()
	ro := s.config.Spec.Rollout
	opts := rollout.Options{
		MaxUnavailable:   rollout.MaxUnavailable(ro.MaxUnavailable, len(s.owned)),
		Paused:           ro.Paused,
		ProgressDeadline: time.Duration(ro.ProgressDeadlineSeconds) * time.Second,
		Now:              now,
	}
	nodes := r.rolloutNodes(s)
	s.plan = rollout.Compute(nodes, opts)
	if rollback.Possible(s.config) {
		failures, next := rollout.Failures(nodes, opts)
		if len(failures) > 0 {
			r.startRollback(ctx, s, failures, opts, now)
			return nil
		}
		if next > 0 && (s.plan.RequeueAfter == 0 || next < s.plan.RequeueAfter) {
			s.plan.RequeueAfter = next
		}
	}

	writes := slices.Concat(s.plan.Create, s.plan.Update)
	written := make([]*winproxyv1alpha1.WindowsProxyNode, len(writes))
	errs := parallel(len(writes), func(i int) (err error) {
		written[i], err = r.writeNode(ctx, s.config, s.wpns[writes[i]], writes[i], s.target[writes[i]], now)
		return err
	})
	for i, w := range written {
		if w != nil {
			s.wpns[writes[i]] = w
		}
	}
	owned := make(map[string]bool, len(s.owned))
	for _, n := range s.owned {
		owned[n.Name] = true
	}
	var stale []*winproxyv1alpha1.WindowsProxyNode
	for name, w := range s.wpns {
		if !owned[name] && !s.takenOver[name] && w.Spec.ConfigName == s.config.Name {
			stale = append(stale, w)
		}
	}
	errs = append(errs, parallel(len(stale), func(i int) error { return r.deleteNode(ctx, stale[i]) })...)
	for _, w := range stale {
		delete(s.wpns, w.Name)
	}
	errs = append(errs, r.writeStandby(ctx, s)...)
	return errors.Join(errs...)
}

// rolloutNodes is each owned node as the rollout sees it, moving towards s.target.
func (r *WindowsProxyConfigReconciler) rolloutNodes(s *scope) []rollout.Node {
	nodes := make([]rollout.Node, 0, len(s.owned))
	for _, n := range s.owned {
		rn := rollout.Node{Name: n.Name, Desired: s.target[n.Name].hash}
		if w := s.wpns[n.Name]; w != nil {
			rn.Current = w.Spec.Hash
			rn.Foreign = w.Spec.ConfigName != s.config.Name
			rn.Drifted = !rn.Foreign && r.matched.Drifted(w)
			rn.Programmed, rn.Degraded = agentReport(w)
			if rn.Degraded {
				rn.DegradedSince = meta.FindStatusCondition(w.Status.Conditions, winproxyv1alpha1.ConditionDegraded).LastTransitionTime.Time
			}
			if c := meta.FindStatusCondition(w.Status.Conditions, winproxyv1alpha1.ConditionAgentAlive); c != nil && c.Status == metav1.ConditionFalse {
				rn.Silent, rn.SilentSince = true, c.LastTransitionTime.Time
			}
			// The progress deadline ends once the agent programmed the hash (it says so in
			// status.programmedHash): a later lapse is not a stalled rollout.
			rn.ProgrammedOnce = w.Status.ProgrammedHash == w.Spec.Hash
			rn.UpdatedAt = updatedAt(w)
		}
		nodes = append(nodes, rn)
	}
	return nodes
}

// writeWorkers bounds the API writes one reconcile has in flight. A 100% rollout to a large fleet
// is one write per node, so it lasts as long as the apiserver takes for them: with 16 in flight the
// requests' latency bound it (BenchmarkFleet: 1,000 bare patches took 21.9 s 16 at a time, 14.6 s
// 64 at a time, on 2 shared cores). 64 is well under the apiserver's default concurrency (400
// reads and 200 writes, which API Priority and Fairness shares among its priority levels); beyond
// a level's share, APF queues requests rather than failing them.
const writeWorkers = 64

// parallel runs fn(0..n-1) on up to writeWorkers goroutines and returns the errors.
func parallel(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, writeWorkers) {
		wg.Go(func() {
			for i := range next {
				errs[i] = fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return slices.DeleteFunc(errs, func(err error) bool { return err == nil })
}

// writeNode gives node name its resolved config, creating its WindowsProxyNode or taking it over
// from the config that owned the node before.
func (r *WindowsProxyConfigReconciler) writeNode(ctx context.Context, cfg *winproxyv1alpha1.WindowsProxyConfig, existing *winproxyv1alpha1.WindowsProxyNode, name string, res resolution, now time.Time) (*winproxyv1alpha1.WindowsProxyNode, error) {
	w := &winproxyv1alpha1.WindowsProxyNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if existing != nil {
		w = existing.DeepCopy()
	}
	before := w.DeepCopy()
	w.Spec = winproxyv1alpha1.WindowsProxyNodeSpec{ConfigName: cfg.Name, Hash: res.hash, Proxy: res.proxy}
	metav1.SetMetaDataAnnotation(&w.ObjectMeta, UpdatedAtAnnotation, now.UTC().Format(time.RFC3339))
	// The owners change only on a takeover: a patch that rewrites them could drop a standby
	// owner another config just added (see package handover).
	if !metav1.IsControlledBy(w, cfg) {
		w.OwnerReferences = slices.DeleteFunc(w.OwnerReferences, func(o metav1.OwnerReference) bool {
			return o.Controller != nil && *o.Controller
		})
		if err := controllerutil.SetControllerReference(cfg, w, r.client.Scheme()); err != nil {
			return nil, err
		}
	}
	log := ctrl.LoggerFrom(ctx).WithValues("WindowsProxyNode", klog.KObj(w), "hash", res.hash)
	if existing == nil {
		log.V(2).Info("Creating WindowsProxyNode")
		if err := r.client.Create(ctx, w); err != nil {
			return nil, fmt.Errorf("creating WindowsProxyNode %s: %w", name, err)
		}
		r.recentNodes.Record("", w)
		return w, nil
	}
	log.V(2).Info("Updating WindowsProxyNode", "previousHash", existing.Spec.Hash, "previousConfig", existing.Spec.ConfigName)
	if err := r.client.Patch(ctx, w, client.MergeFrom(before)); err != nil {
		return nil, fmt.Errorf("updating WindowsProxyNode %s: %w", name, err)
	}
	r.recentNodes.Record(existing.ResourceVersion, w)
	return w, nil
}

// deleteNode deletes w only if nobody changed it since it was read, so that a node another config
// just took over is never deleted by its previous config.
func (r *WindowsProxyConfigReconciler) deleteNode(ctx context.Context, w *winproxyv1alpha1.WindowsProxyNode) error {
	ctrl.LoggerFrom(ctx).V(2).Info("Deleting WindowsProxyNode of a node no longer selected", "WindowsProxyNode", klog.KObj(w))
	uid, rv := w.UID, w.ResourceVersion
	err := r.client.Delete(ctx, w, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting WindowsProxyNode %s: %w", w.Name, err)
	}
	r.recentNodes.Forget(w.Name)
	r.matched.Forget(w.Name)
	return nil
}

// agentReport says whether the agent programmed w's current hash, or reports it Degraded. The
// hash ties a report to a config: it is what the agent acted on; the conditions' generation ties
// it to the spec as it is now, which matters when a spec edited by hand is restored under the
// same hash.
func agentReport(w *winproxyv1alpha1.WindowsProxyNode) (programmed, degraded bool) {
	if w.Status.ObservedHash != w.Spec.Hash {
		return false, false
	}
	current := func(t string) bool {
		c := meta.FindStatusCondition(w.Status.Conditions, t)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation
	}
	return current(winproxyv1alpha1.ConditionProgrammed), current(winproxyv1alpha1.ConditionDegraded)
}

// updatedAt is when w's hash last changed, or its creation time if the annotation is missing.
func updatedAt(w *winproxyv1alpha1.WindowsProxyNode) time.Time {
	if t, err := time.Parse(time.RFC3339, w.Annotations[UpdatedAtAnnotation]); err == nil {
		return t
	}
	return w.CreationTimestamp.Time
}

// patchStatus computes the status from the scope and writes it in one patch if it changed;
// observedGeneration advances only when the reconcile succeeded.
func (r *WindowsProxyConfigReconciler) patchStatus(ctx context.Context, s *scope, succeeded bool) error {
	if !s.selected {
		return nil
	}
	cfg := s.config
	in := &configstatus.Inputs{
		Generation:     cfg.Generation,
		Spec:           &cfg.Spec,
		SelectorErr:    s.selectorErr,
		Conflicts:      s.conflicts,
		Plan:           s.plan,
		Rollout:        cfg.Spec.Rollout,
		MaxUnavailable: rollout.MaxUnavailable(cfg.Spec.Rollout.MaxUnavailable, len(s.owned)),
		LastGood:       s.before.Status.LastGood,
		Rollback:       s.rollback,
	}
	for _, n := range s.owned {
		in.Nodes = append(in.Nodes, r.view(s, n.Name))
	}
	cfg.Status = configstatus.Compute(&s.before.Status, in, r.clock.Now())
	if succeeded {
		cfg.Status.ObservedGeneration = cfg.Generation
	}
	recordMetrics(cfg.Name, &cfg.Status)
	r.recordNodeFailures(cfg, s.before.Status.FailingNodes, configstatus.FailingNodes(in), s.owned)
	if equality.Semantic.DeepEqual(s.before.Status, cfg.Status) {
		return nil
	}
	r.emitEvents(s.before, cfg)
	ctrl.LoggerFrom(ctx).V(1).Info("Updating WindowsProxyConfig status", "selected", cfg.Status.Nodes.Selected, "updated", cfg.Status.Nodes.Updated, "programmed", cfg.Status.Nodes.Programmed)
	if err := r.client.Status().Patch(ctx, cfg, client.MergeFrom(s.before)); err != nil {
		return fmt.Errorf("updating status of WindowsProxyConfig %s: %w", cfg.Name, err)
	}
	r.recentConfigs.Record(s.before.ResourceVersion, cfg.DeepCopy())
	return nil
}

// view is the owned node name as the status sees it: what it should run, and what its agent
// reports for what it runs.
func (r *WindowsProxyConfigReconciler) view(s *scope, name string) configstatus.Node {
	v := configstatus.Node{Name: name, Desired: s.target[name].hash, Err: s.target[name].err, SpecErr: s.resolved[name].err}
	w := s.wpns[name]
	if w == nil || w.Spec.ConfigName != s.config.Name {
		return v
	}
	v.Current = w.Spec.Hash
	v.Programmed, _ = agentReport(w)
	if c := meta.FindStatusCondition(w.Status.Conditions, winproxyv1alpha1.ConditionProgrammed); !v.Programmed && c != nil && c.Status != metav1.ConditionTrue && w.Status.ObservedHash == w.Spec.Hash {
		v.WaitingReason = c.Reason
	}
	if c := meta.FindStatusCondition(w.Status.Conditions, winproxyv1alpha1.ConditionDegraded); c != nil && c.Status == metav1.ConditionTrue {
		v.Degraded, v.DegradedReason, v.DegradedMessage = true, c.Reason, c.Message
	}
	v.Downgraded = meta.IsStatusConditionTrue(w.Status.Conditions, winproxyv1alpha1.ConditionDualStackDowngraded)
	if c := meta.FindStatusCondition(w.Status.Conditions, winproxyv1alpha1.ConditionAgentAlive); c != nil && c.Status == metav1.ConditionFalse {
		v.Silent, v.SilentReason, v.SilentMessage = true, c.Reason, c.Message
	}
	return v
}
