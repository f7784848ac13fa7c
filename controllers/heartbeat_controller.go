package controllers

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers/heartbeat"
)

// HeartbeatReconciler writes into each WindowsProxyNode whether its agent is alive (AgentAlive),
// from the agents' heartbeat Leases (see package heartbeat). It writes only when the verdict
// changes: a fleet whose heartbeats are all fresh costs a map update per renewal and nothing else.
// The config's reconciler reads AgentAlive like any other condition of its nodes, and counts,
// lists and reports the silent ones.
//
// Its Lease permissions (get, list, watch in the heartbeat namespace) are a Role of the Helm chart
// (templates/controller-rbac.yaml), not a marker here: a marker would grant them in every
// namespace.
type HeartbeatReconciler struct {
	client client.Client
	// live reads past the cache, to confirm a Lease is stale before saying so: after the
	// controller's own connection was cut, its cache may not have caught up yet.
	live      client.Reader
	clock     clock.Clock
	tracker   *heartbeat.Tracker
	namespace string
}

// NewHeartbeatReconciler returns a reconciler of the heartbeats in namespace, which declares an
// agent lost after grace without a renewal.
func NewHeartbeatReconciler(c client.Client, live client.Reader, namespace string, grace time.Duration, clk clock.Clock) *HeartbeatReconciler {
	return &HeartbeatReconciler{client: c, live: live, clock: clk, namespace: namespace, tracker: heartbeat.NewTracker(namespace, grace, clk.Now())}
}

// +kubebuilder:rbac:groups=winproxy.io,resources=windowsproxynodes/status,verbs=patch

// SetupWithManager registers the reconciler: WindowsProxyNodes when they appear or someone else
// changes AgentAlive, Lease events that may change a verdict at once, and a sweep that hands over
// the nodes whose heartbeat has just gone stale.
func (r *HeartbeatReconciler) SetupWithManager(mgr ctrl.Manager) error {
	leases := handler.TypedFuncs[*coordinationv1.Lease, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[*coordinationv1.Lease], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.observe(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*coordinationv1.Lease], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.observe(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*coordinationv1.Lease], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.tracker.Forget(e.Object.Name)
			q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: e.Object.Name}})
		},
	}
	heartbeatAge.source.Store(&ageSource{tracker: r.tracker, clock: r.clock})
	return ctrl.NewControllerManagedBy(mgr).
		Named("heartbeat").
		// Writes happen on transitions only, but at install or upgrade every node gets its first
		// AgentAlive at once: a few in flight keep a large fleet's first verdicts to seconds.
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: 8}).
		For(&winproxyv1alpha1.WindowsProxyNode{}, builder.WithPredicates(aliveChanged)).
		WatchesRawSource(source.TypedKind(mgr.GetCache(), &coordinationv1.Lease{}, leases)).
		WatchesRawSource(source.Func(r.sweep)).
		Complete(r)
}

// observe records a Lease event: O(1), and a reconcile only when the verdict may change now.
func (r *HeartbeatReconciler) observe(l *coordinationv1.Lease, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if r.tracker.Observe(l, r.clock.Now()) {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: l.Name}})
	}
}

// sweep hands the nodes whose heartbeat went stale to the queue, every quarter grace period, so a
// silent node is reported at most a quarter grace period late.
func (r *HeartbeatReconciler) sweep(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	every := max(r.tracker.Grace()/4, time.Second)
	go func() {
		for {
			t := r.clock.NewTimer(every)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
			for _, name := range r.tracker.Stale(r.clock.Now()) {
				q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
			}
		}
	}()
	return nil
}

// confirm reads node name's Lease from the API server, past the cache, and records it: a version
// the cache has not shown yet counts as a renewal seen now.
func (r *HeartbeatReconciler) confirm(ctx context.Context, name string, now time.Time) error {
	lease := &coordinationv1.Lease{}
	switch err := r.live.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: name}, lease); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading the heartbeat Lease %s/%s: %w", r.namespace, name, err)
	}
	r.tracker.Observe(lease, now)
	return nil
}

// aliveChanged passes new WindowsProxyNodes, deleted ones, and updates that changed or dropped
// AgentAlive: a status write of the agent's that leaves it alone needs no verdict.
var aliveChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*winproxyv1alpha1.WindowsProxyNode)
		n, ok2 := e.ObjectNew.(*winproxyv1alpha1.WindowsProxyNode)
		if !ok1 || !ok2 {
			return true
		}
		oa := meta.FindStatusCondition(o.Status.Conditions, winproxyv1alpha1.ConditionAgentAlive)
		na := meta.FindStatusCondition(n.Status.Conditions, winproxyv1alpha1.ConditionAgentAlive)
		return na == nil || oa == nil || oa.Status != na.Status || oa.Reason != na.Reason
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// Reconcile writes the verdict on node req.Name's agent into its WindowsProxyNode, if it changed.
func (r *HeartbeatReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wpn := &winproxyv1alpha1.WindowsProxyNode{}
	if err := r.client.Get(ctx, req.NamespacedName, wpn); err != nil {
		if apierrors.IsNotFound(err) {
			r.tracker.Unselected(req.Name, r.clock.Now())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	lease := &coordinationv1.Lease{}
	switch err := r.client.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: req.Name}, lease); {
	case apierrors.IsNotFound(err):
		r.tracker.Forget(req.Name)
	case err != nil:
		return ctrl.Result{}, err
	default:
		r.tracker.Observe(lease, r.clock.Now())
	}
	now := r.clock.Now()
	v := r.tracker.Judge(req.Name, wpn.CreationTimestamp.Time, now)
	if !v.Decided {
		return ctrl.Result{RequeueAfter: v.RecheckAt.Sub(now)}, nil
	}
	if !v.Alive && v.Reason == winproxyv1alpha1.ReasonHeartbeatLost && !meta.IsStatusConditionFalse(wpn.Status.Conditions, winproxyv1alpha1.ConditionAgentAlive) {
		// About to say an agent is gone: make sure it is not this controller's view that lags.
		if err := r.confirm(ctx, req.Name, now); err != nil {
			return ctrl.Result{}, err
		}
		v = r.tracker.Judge(req.Name, wpn.CreationTimestamp.Time, now)
	}
	after := wpn.DeepCopy()
	if heartbeat.Apply(&after.Status, wpn, v, now) {
		ctrl.LoggerFrom(ctx).Info("Agent heartbeat changed", "WindowsProxyNode", klog.KObj(wpn), "alive", v.Alive, "reason", v.Reason, "message", v.Message)
		// Optimistic: the agent writes this status too, and a write based on an older object
		// would drop what it wrote since. A conflict is retried on the next read.
		if err := r.client.Status().Patch(ctx, after, client.MergeFromWithOptions(wpn, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("writing AgentAlive of WindowsProxyNode %s: %w", wpn.Name, err)
		}
	}
	r.tracker.Reported(req.Name, wpn.Spec.ConfigName, v.Alive)
	return ctrl.Result{}, nil
}
