package ownership

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/winproxy/winproxy/agent/hns"
)

// fullDisk is a write fault that a test turns on and off.
type fullDisk struct{ on atomic.Bool }

func (d *fullDisk) fault() error {
	if d.on.Load() {
		return syscall.ENOSPC
	}
	return nil
}

// A full disk never refuses a create: the intent and the created load balancer are held in
// memory, the ledger says how many changes its journal lacks and why, and once the disk has room
// the next Flush writes them all, so that a new process proves every load balancer as before.
func TestLedgerFullDiskKeepsChangesInMemoryUntilSpaceReturns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "owned")
	disk := &fullDisk{}
	l, err := OpenLedger(path, WithWriteFault(disk.fault))
	if err != nil {
		t.Fatal(err)
	}
	host := &recordingClient{}
	owned := NewOwned(host, l)
	create := func(i int) hns.LoadBalancer {
		t.Helper()
		lb, err := owned.CreateLoadBalancer(context.Background(), testLB(i))
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		return lb
	}
	before := create(0)
	disk.on.Store(true)
	var during []hns.LoadBalancer
	for i := 1; i <= 20; i++ {
		during = append(during, create(i))
	}
	if err := owned.DeleteLoadBalancer(context.Background(), before); err != nil {
		t.Fatalf("a delete on a full disk: %v", err)
	}
	st := l.Status()
	if st.Unsaved == 0 || !strings.Contains(fmt.Sprint(st.WriteErr), syscall.ENOSPC.Error()) {
		t.Fatalf("status on a full disk: %+v, want unsaved changes and %q", st, syscall.ENOSPC)
	}
	if err := l.Flush(); err == nil {
		t.Fatal("Flush on a full disk succeeded")
	}
	for _, lb := range during {
		if !owned.OwnsLoadBalancer(lb) {
			t.Errorf("%s created on a full disk is not proven in memory", lb.ID)
		}
	}
	disk.on.Store(false)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if st := l.Status(); st.Unsaved != 0 || st.WriteErr != nil || st.SpaceErr != nil {
		t.Errorf("status once the disk has room: %+v, want all written", st)
	}
	create(21) // appends go on after the rewrite
	l.Close()
	again, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	reopened := NewOwned(host, again)
	for _, lb := range during {
		if !reopened.OwnsLoadBalancer(lb) {
			t.Errorf("%s created on a full disk is not proven after a restart", lb.ID)
		}
	}
	if again.Has(before.ID) || again.pendingIntents() {
		t.Errorf("after a restart: has the deleted %s %v, pending intents %v; want neither", before.ID, again.Has(before.ID), again.pendingIntents())
	}
}

// A ledger that cannot be written when the agent starts is no reason to stop: it starts in
// memory and says so.
func TestLedgerOpensOnAFullDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "owned")
	if err := os.WriteFile(path, []byte("+L LB-1 "+strings.Repeat("A", fingerprintLen)+"\n+I "), 0o600); err != nil {
		t.Fatal(err)
	}
	disk := &fullDisk{}
	disk.on.Store(true)
	l, err := OpenLedger(path, WithWriteFault(disk.fault))
	if err != nil {
		t.Fatalf("opening on a full disk: %v", err)
	}
	defer l.Close()
	if !l.Has("LB-1") {
		t.Error("the journal's entry is lost")
	}
	// The journal ends in a torn line: nothing may be appended to it before it is rewritten.
	if st := l.Status(); st.Unsaved == 0 || st.WriteErr == nil {
		t.Errorf("status: %+v, want the changes held in memory", st)
	}
}

func testLB(i int) hns.LoadBalancer {
	return hns.LoadBalancer{FrontendVIPs: nil, PortMapping: hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 8080, ExternalPort: uint16(30000 + i)}}
}

// recordingClient creates load balancers with sequential IDs and deletes anything; the ledger's
// tests need no more of HNS.
type recordingClient struct {
	hns.Client
	n int
}

func (c *recordingClient) CreateLoadBalancer(_ context.Context, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	c.n++
	lb.ID = fmt.Sprintf("LB-%04d", c.n)
	return lb, nil
}

func (c *recordingClient) DeleteLoadBalancer(context.Context, string) error { return nil }
