//go:build !windows

package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/fleet"
)

// maxOutage bounds how long a Service may be without its load balancer on an HNS without modify:
// every change deletes it and creates the replacement, and a SIGKILL between the two leaves it
// missing until the restarted agent's first sync. Before the fix a full disk left it missing
// until the disk had room.
const maxOutage = 15 * time.Second

// TestFullDisk fills the disk under the agent's ownership ledger (the simulated host's weather:
// every ledger write fails with "no space left on device") while endpoints churn on Windows
// Server 2019's HNS, which cannot modify a load balancer, and SIGKILLs the agent meanwhile. No
// Service may stay without its load balancer, HNS must settle exactly on the cluster while the
// disk is still full, the node must say OwnershipRecorded=False naming the disk, and once the disk
// has room the ledger must catch up: the condition turns True and a restart writes nothing.
func TestFullDisk(t *testing.T) {
	services, kills := scale(40, 150), scale(4, 20)
	r := newRig(t, services)
	if _, err := r.settle(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	r.withHost(func(h *sim.Sim) error { return h.SetProfile(sim.WS2019) })
	r.agent.Kill() // the HNS version is read once per process
	if err := r.agent.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.settle(time.Minute); err != nil {
		t.Fatal(err)
	}
	r.weather(sim.Weather{Latency: 5 * time.Millisecond, DiskFull: true})
	o := r.watchOutages()
	ctx, stopChurn := context.WithCancel(context.Background())
	churned := make(chan int)
	go r.churn(ctx, churned)
	rng := rand.New(rand.NewSource(2))
	for range kills {
		time.Sleep(time.Duration(1000+rng.Intn(1500)) * time.Millisecond)
		r.agent.Kill()
		if err := r.agent.Start(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second)
	stopChurn()
	changes := <-churned
	took, err := r.settle(2 * time.Minute)
	o.finish()
	if err != nil {
		t.Fatalf("on the full disk: %v", err)
	}
	if o.longest > maxOutage {
		t.Errorf("%s was without its load balancer for %v, want at most %v", o.worst, o.longest, maxOutage)
	}
	c := r.ownership(t)
	if c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonLedgerNotWritable || !strings.Contains(c.Message, "no space left on device") {
		t.Errorf("on the full disk OwnershipRecorded is %s %s %q, want False %s naming the disk", c.Status, c.Reason, c.Message, v1alpha1.ReasonLedgerNotWritable)
	}
	if err := r.diskWarning(); err != nil {
		t.Error(err)
	}
	r.weather(sim.Weather{})
	recovered := time.Now()
	if err := r.waitOwnership(v1alpha1.ReasonLedgerWritten, time.Minute); err != nil {
		t.Fatal(err)
	}
	caughtUp := time.Since(recovered)
	restartWritesNothing(t, r, "once the disk had room")
	record("full disk (WS2019, no modify): %d SIGKILLs during %d endpoint changes on %d services with every ledger write failing; longest outage of a service %v (bound %v, delete and create, or a kill between them); settled %v after the churn with the disk still full, leaks 0; OwnershipRecorded False/%s while full, True %v after space returned; restart writes 0",
		kills, changes, services, o.longest.Round(10*time.Millisecond), maxOutage, took.Round(100*time.Millisecond), v1alpha1.ReasonLedgerNotWritable, caughtUp.Round(100*time.Millisecond))
}

// withHost runs f on the rig's simulated host.
func (r *rig) withHost(f func(*sim.Sim) error) {
	r.t.Helper()
	h, err := fleet.OpenHost(r.host, node)
	if err != nil {
		r.t.Fatal(err)
	}
	defer h.Close()
	if err := f(h); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) ownership(t *testing.T) metav1.Condition {
	t.Helper()
	wpn := &v1alpha1.WindowsProxyNode{}
	if err := r.env.Client.Get(context.Background(), client.ObjectKey{Name: node.Name}, wpn); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(wpn.Status.Conditions, v1alpha1.ConditionOwnershipRecorded)
	if c == nil {
		t.Fatalf("no %s condition: %+v", v1alpha1.ConditionOwnershipRecorded, wpn.Status.Conditions)
	}
	return *c
}

// diskWarning finds the agent's Warning Event naming the node and the disk.
func (r *rig) diskWarning() error {
	var list eventsv1.EventList
	if err := r.env.Client.List(context.Background(), &list); err != nil {
		return err
	}
	for _, e := range list.Items {
		if e.Regarding.Name == node.Name && e.Type == corev1.EventTypeWarning && e.Reason == v1alpha1.ReasonLedgerNotWritable &&
			strings.Contains(e.Note, "node "+node.Name) && strings.Contains(e.Note, "no space left on device") {
			return nil
		}
	}
	return fmt.Errorf("no Warning Event %s about node %s naming the disk", v1alpha1.ReasonLedgerNotWritable, node.Name)
}

// waitOwnership waits until OwnershipRecorded has reason.
func (r *rig) waitOwnership(reason string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last metav1.Condition
	for time.Now().Before(deadline) {
		if last = r.ownership(r.t); last.Reason == reason {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("OwnershipRecorded is still %s %s %q after %v, want %s", last.Status, last.Reason, last.Message, timeout, reason)
}

// outages follows, sample by sample (every 50 ms), how long each service has been without its
// load balancer, and keeps the longest stretch.
type outages struct {
	longest time.Duration
	worst   string
	stop    chan struct{}
	done    chan struct{}
}

func (r *rig) watchOutages() *outages {
	o := &outages{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(o.done)
		since := map[string]time.Time{}
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-o.stop:
				return
			case <-t.C:
			}
			st, err := r.snapshot()
			if err != nil {
				continue
			}
			now, missing := time.Now(), map[string]bool{}
			for _, svc := range r.model.missing(st) {
				missing[svc] = true
				if _, ok := since[svc]; !ok {
					since[svc] = now
				}
				if d := now.Sub(since[svc]); d > o.longest {
					o.longest, o.worst = d, svc
				}
			}
			for svc := range since {
				if !missing[svc] {
					delete(since, svc)
				}
			}
		}
	}()
	return o
}

func (o *outages) finish() {
	close(o.stop)
	<-o.done
}
