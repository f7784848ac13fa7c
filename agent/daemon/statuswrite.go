package daemon

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/agent/nodestatus"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// writeStatus writes the status build makes of wpn, when it differs from wpn's. Two writers share
// the status (the agent and, for AgentAlive, the controller) and the agent writes from its cache,
// so the write is optimistic: one based on an object someone changed since is built again on a
// fresh read, once, unless the spec changed too (the sync that change triggers reports on it).
//
// inputs, when not nil, are what build reads besides wpn (nodestatus.Inputs): a build from the
// same WindowsProxyNode (its resourceVersion) and inputs as the last one that changed nothing is
// skipped.
func (a *agent) writeStatus(ctx context.Context, wpn *v1alpha1.WindowsProxyNode, inputs *nodestatus.Sync, build func(*v1alpha1.WindowsProxyNode) v1alpha1.WindowsProxyNodeStatus) error {
	a.statusMu.Lock()
	defer a.statusMu.Unlock()
	if inputs != nil && a.unchanged.same(wpn, *inputs) {
		return nil
	}
	for retried := false; ; retried = true {
		st := build(wpn)
		if equality.Semantic.DeepEqual(st, wpn.Status) {
			if inputs != nil {
				a.unchanged = unchangedStatus{version: wpn.ResourceVersion, inputs: *inputs}
			}
			return nil
		}
		// The cache may hand the next sync the object from before this write: its last
		// unchanged build must not stand for the status written now.
		a.unchanged = unchangedStatus{}
		after := wpn.DeepCopy()
		after.Status = st
		err := a.client.Status().Patch(ctx, after, client.MergeFromWithOptions(wpn, client.MergeFromWithOptimisticLock{}))
		if err == nil || !apierrors.IsConflict(err) || retried {
			if err != nil {
				return fmt.Errorf("writing the WindowsProxyNode status: %w", err)
			}
			return nil
		}
		fresh := &v1alpha1.WindowsProxyNode{}
		if err := a.reader.Get(ctx, client.ObjectKeyFromObject(wpn), fresh); err != nil {
			return fmt.Errorf("reading the WindowsProxyNode after a conflicting status write: %w", err)
		}
		if fresh.Generation != wpn.Generation {
			return nil
		}
		wpn = fresh
	}
}

// unchangedStatus is the last status build that found nothing to write: of the WindowsProxyNode
// at version, from inputs. Most EndpointSlice events move an endpoint and change no figure of the
// status; building it and comparing it with the one written was 4.6 % of the agent's CPU profile
// of such a churn, and a tenth of what an event allocated (BenchmarkAgent, 2k Services).
type unchangedStatus struct {
	version string
	inputs  nodestatus.Sync
}

// same reports whether building wpn's status from inputs would find nothing to write again. Any
// write, the agent's or the controller's, gives wpn a new resourceVersion.
func (u unchangedStatus) same(wpn *v1alpha1.WindowsProxyNode, inputs nodestatus.Sync) bool {
	return u.version != "" && u.version == wpn.ResourceVersion && nodestatus.SameInputs(u.inputs, inputs)
}

// heartbeat is the agent's heartbeat: its node's Lease in opts.HeartbeatNamespace, renewed while
// the sync loop passes the liveness test, and after each beat a look at whether the node fell
// behind.
func (a *agent) heartbeat(c client.Client) *heartbeat {
	interval := a.opts.HeartbeatInterval
	if interval <= 0 {
		interval = v1alpha1.DefaultHeartbeatIntervalSeconds * time.Second
	}
	return &heartbeat{
		client: c, key: client.ObjectKey{Namespace: a.opts.HeartbeatNamespace, Name: a.opts.NodeName},
		interval: interval, clock: a.opts.Clock, log: a.log.WithName("heartbeat"),
		stuck: func() string { return a.runner.Stuck(a.livenessTimeout()) },
		after: a.reportBehind,
	}
}

// reportBehind writes Programmed=False (ProgrammingBehind) once the node has been behind for the
// health timeout, even while a long sync is running: the status must not say Programmed while HNS
// lags the cluster. Nothing is written while the node keeps up, nor before the first sync.
func (a *agent) reportBehind(ctx context.Context) {
	since, behind := a.health.proxy.Behind()
	if !behind || !a.started.Load() {
		return
	}
	wpn := &v1alpha1.WindowsProxyNode{}
	if err := a.client.Get(ctx, client.ObjectKey{Name: a.opts.NodeName}, wpn); err != nil {
		return
	}
	timeout := a.health.proxy.Timeout()
	err := a.writeStatus(ctx, wpn, nil, func(w *v1alpha1.WindowsProxyNode) v1alpha1.WindowsProxyNodeStatus {
		st, _ := nodestatus.Behind(w.Status, w, since, timeout, a.opts.Clock.Now())
		return st
	})
	if err != nil {
		a.log.Error(err, "Reporting that HNS is behind failed")
	}
}
