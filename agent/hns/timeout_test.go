package hns_test

import (
	"context"
	"testing"
	"time"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
)

func TestWithTimeoutGivesUpOnAHungHNS(t *testing.T) {
	s := sim.MustNew()
	c := hns.WithTimeout(s, 100*time.Millisecond)
	ctx := context.Background()
	if _, err := c.Version(ctx); err != nil {
		t.Fatalf("Version on a healthy HNS: %v", err)
	}
	if err := s.SetHNSHung(true); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := c.ListLoadBalancers(ctx)
	if !hns.IsTimeout(err) || hns.Reason(err) != "timeout" {
		t.Fatalf("ListLoadBalancers on a hung HNS = %v, want a timeout", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("gave up after %v, want about the timeout", waited)
	}
	// The hung call is still blocked, as on Windows; once HNS answers again so do new calls.
	if err := s.SetHNSHung(false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListLoadBalancers(ctx); err != nil {
		t.Errorf("ListLoadBalancers after HNS came back: %v", err)
	}
}
