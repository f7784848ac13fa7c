package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

// heartbeat renews the node's Lease while the agent's sync loop is healthy, as the kubelet renews
// its node's Lease: the controller reads the Leases to tell a live agent from a dead or stuck one
// (the WindowsProxyNode's AgentAlive condition), which a status written only on change cannot
// show. A Lease is the object made for this: one small write per interval, no status write.
//
// The test of health is the agent's own /healthz (the sync loop made progress within its liveness
// timeout), so a long first sync whose HNS calls keep answering renews, and a loop behind a wedged
// HNS does not. When the loop gets stuck, the agent says why in the Lease once, without renewing
// it, and the controller reports the node at once.
type heartbeat struct {
	// client reads and writes Leases on the API server; the agent does not cache them.
	client   client.Client
	key      client.ObjectKey
	interval time.Duration
	clock    clock.Clock
	log      logr.Logger
	// stuck says why the sync loop is stuck, "" while it is healthy.
	stuck func() string
	// after runs after each beat, renewed or not, e.g. to report a node that fell behind.
	after func(ctx context.Context)

	// lease is the Lease as last read or written; nil when it must be read again.
	lease *coordinationv1.Lease
	// saidStuck is true once this stuck spell was written into the Lease.
	saidStuck bool
}

// run beats at once and then every interval until ctx is done.
func (h *heartbeat) run(ctx context.Context) error {
	for {
		h.beat(ctx)
		t := h.clock.NewTimer(h.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// beat renews the Lease, or says once that the sync loop is stuck. A failed write is logged and
// retried at the next beat on a fresh read: the controller allows several missed beats.
func (h *heartbeat) beat(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, h.interval)
	defer cancel()
	var err error
	if why := h.stuck(); why != "" {
		if !h.saidStuck {
			if err = h.write(ctx, false, why); err == nil {
				h.saidStuck = true
				h.log.Info("Sync loop stuck: the heartbeat stops until it makes progress", "why", why)
			}
		}
	} else if err = h.write(ctx, true, ""); err == nil && h.saidStuck {
		h.saidStuck = false
		h.log.Info("Sync loop progressing again: heartbeat renewed")
	}
	if err != nil {
		h.lease = nil
		h.log.Error(err, "Writing the heartbeat Lease failed; retrying at the next beat", "lease", h.key)
	}
	if h.after != nil {
		h.after(ctx)
	}
}

// write renews the Lease (renew) or leaves its renew time as it is, with the stuck annotation set
// to stuck, or removed when stuck is empty. The Lease is created on the first write.
func (h *heartbeat) write(ctx context.Context, renew bool, stuck string) error {
	if h.lease == nil {
		l := &coordinationv1.Lease{}
		switch err := h.client.Get(ctx, h.key, l); {
		case apierrors.IsNotFound(err):
			return h.create(ctx, renew, stuck)
		case err != nil:
			return fmt.Errorf("reading the heartbeat Lease: %w", err)
		}
		h.lease = l
	}
	l := h.lease.DeepCopy()
	h.fill(l, renew, stuck)
	// Update carries the resourceVersion read: a Lease changed by someone else is read again.
	if err := h.client.Update(ctx, l); err != nil {
		return fmt.Errorf("renewing the heartbeat Lease: %w", err)
	}
	h.lease = l
	return nil
}

func (h *heartbeat) create(ctx context.Context, renew bool, stuck string) error {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: h.key.Namespace, Name: h.key.Name}}
	now := metav1.NewMicroTime(h.clock.Now())
	l.Spec.AcquireTime = &now
	h.fill(l, renew, stuck)
	if err := h.client.Create(ctx, l); err != nil {
		return fmt.Errorf("creating the heartbeat Lease: %w", err)
	}
	h.lease = l
	return nil
}

// fill sets what every heartbeat write says: who holds the Lease, for how long a renewal
// vouches (four intervals, as the kubelet's 10 s and 40 s; the controller applies its own grace
// period), and the renew time and stuck annotation.
func (h *heartbeat) fill(l *coordinationv1.Lease, renew bool, stuck string) {
	metav1.SetMetaDataLabel(&l.ObjectMeta, v1alpha1.HeartbeatLabel, "true")
	l.Spec.HolderIdentity = ptr.To(h.key.Name)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(max(1, 4*h.interval/time.Second)))
	if renew || l.Spec.RenewTime == nil {
		now := metav1.NewMicroTime(h.clock.Now())
		l.Spec.RenewTime = &now
	}
	if stuck == "" {
		delete(l.Annotations, v1alpha1.SyncLoopStuckAnnotation)
		return
	}
	metav1.SetMetaDataAnnotation(&l.ObjectMeta, v1alpha1.SyncLoopStuckAnnotation, stuck)
}
