package hnsrpc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/hnsrpc"
	"github.com/winproxy/winproxy/agent/hns/hnstest"
	"github.com/winproxy/winproxy/agent/hns/sim"
)

// serve serves c on a free loopback port for the test and returns a client of it.
func serve(t *testing.T, c hns.Client) *hnsrpc.Client {
	t.Helper()
	srv, err := hnsrpc.Serve("127.0.0.1:0", c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	client, err := hnsrpc.NewClient(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return client
}

// TestContract holds the client, in front of a simulator served by the test, to the hns.Client
// contract the simulator passes on its own: every profile, L2Bridge and Overlay.
func TestContract(t *testing.T) {
	for _, p := range sim.Profiles() {
		for _, typ := range []hns.NetworkType{hns.NetworkTypeL2Bridge, hns.NetworkTypeOverlay} {
			t.Run(p.Name+"-"+string(typ), func(t *testing.T) {
				hnstest.Run(t, hnstest.SimFixture(p, typ, func(t *testing.T, s *sim.Sim) hns.Client { return serve(t, s) }))
			})
		}
	}
}

// sentinels are every sentinel of package hns, and context's.
var sentinels = []error{
	hns.ErrPortExists, hns.ErrNotFound, hns.ErrNetworkNotFound, hns.ErrEndpointNotFound,
	hns.ErrLoadBalancerNotFound, hns.ErrNotImplemented, hns.ErrHNSNotRunning, hns.ErrInvalidIP,
	hns.ErrTimeout, hns.ErrNotOwned, context.Canceled, context.DeadlineExceeded,
}

// checkSame fails unless got, the error through the client, is want, the error beside the
// implementation: the same text, the same answer of errors.Is for every sentinel, the same fields
// of *hns.Error.
func checkSame(t *testing.T, want, got error) {
	t.Helper()
	if got == nil || got.Error() != want.Error() {
		t.Errorf("through the client: %v, want %v", got, want)
		return
	}
	for _, s := range sentinels {
		if errors.Is(got, s) != errors.Is(want, s) {
			t.Errorf("%v: errors.Is(%v) = %v through the client, %v beside the implementation", want, s, errors.Is(got, s), errors.Is(want, s))
		}
	}
	var w, g *hns.Error
	if errors.As(want, &w) != errors.As(got, &g) {
		t.Fatalf("%v: an *hns.Error on one side only", want)
	}
	// A kind this package does not know crosses as text (in Err).
	knownKind := w == nil || w.Kind == nil || slices.Contains(sentinels, w.Kind)
	if w != nil && (w.Op != g.Op || w.ID != g.ID || w.Code != g.Code || knownKind && (!sameSentinel(g.Kind, w.Kind) || (w.Err == nil) != (g.Err == nil))) {
		t.Errorf("through the client: %#v, want %#v", g, w)
	}
}

// sameSentinel reports whether a and b are the same sentinel (or both nil).
func sameSentinel(a, b error) bool { return errors.Is(a, b) && errors.Is(b, a) }

// Every fault the simulator injects, and so every kind of error it returns, crosses intact.
func TestErrorsCross(t *testing.T) {
	s := sim.MustNew()
	c := serve(t, s)
	ctx := t.Context()
	for _, fault := range append(slices.Clone(sentinels), nil, errors.New("disk on fire")) {
		s.FailOp(hns.OpGetLoadBalancer, fault, 1)
		_, want := s.GetLoadBalancer(ctx, "6F9D0C9E-4B4C-4E3A-9C5B-2B1B7E0A0001")
		s.FailOp(hns.OpGetLoadBalancer, fault, 1)
		_, got := c.GetLoadBalancer(ctx, "6F9D0C9E-4B4C-4E3A-9C5B-2B1B7E0A0001")
		checkSame(t, want, got)
	}
	// The simulator's own answers, not injected ones.
	_, want := s.ModifyLoadBalancer(ctx, "6F9D0C9E-4B4C-4E3A-9C5B-2B1B7E0A0002", hns.LoadBalancer{})
	_, got := c.ModifyLoadBalancer(ctx, "6F9D0C9E-4B4C-4E3A-9C5B-2B1B7E0A0002", hns.LoadBalancer{})
	checkSame(t, want, got)
	if !errors.Is(got, hns.ErrLoadBalancerNotFound) {
		t.Errorf("modify of a missing load balancer: %v, want load balancer not found", got)
	}
	if err := s.SetHNSRunning(false); err != nil {
		t.Fatal(err)
	}
	want, got = s.DeleteEndpoint(ctx, "x"), c.DeleteEndpoint(ctx, "x")
	checkSame(t, want, got)
	if hns.Reason(got) != "hns_not_running" {
		t.Errorf("reason of %v: %s", got, hns.Reason(got))
	}
}

// failing is a Client whose GetLoadBalancer fails with err.
type failing struct {
	hns.Client
	err error
}

func (f failing) GetLoadBalancer(context.Context, string) (hns.LoadBalancer, error) {
	return hns.LoadBalancer{}, f.err
}

// Errors no simulator returns: wrapped sentinels, an *hns.Error inside another error, a kind of
// error this package does not know.
func TestOtherErrorsCross(t *testing.T) {
	unknown := errors.New("a kind of its own")
	for _, err := range []error{
		fmt.Errorf("wrapped: %w", hns.ErrTimeout),
		fmt.Errorf("outer: %w", &hns.Error{Op: hns.OpGetLoadBalancer, ID: "x", Kind: hns.ErrLoadBalancerNotFound, Code: hns.CodeElementNotFound}),
		&hns.Error{Op: hns.OpGetLoadBalancer, Err: fmt.Errorf("inner: %w", hns.ErrNotOwned)},
		&hns.Error{Op: hns.OpGetLoadBalancer, Kind: hns.ErrPortExists, Code: hns.CodePortAlreadyExists, Err: errors.New("detail")},
		&hns.Error{Op: hns.OpGetLoadBalancer, Kind: unknown, Err: errors.New("detail")},
	} {
		_, got := serve(t, failing{err: err}).GetLoadBalancer(t.Context(), "x")
		checkSame(t, err, got)
	}
}

// A call honours its context on both sides: the client returns when it ends, and the served
// call is cancelled.
func TestContext(t *testing.T) {
	s := sim.MustNew(sim.WithOpLatency(hns.OpVersion, time.Hour))
	c := serve(t, s)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Version(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("past the deadline: %v, want deadline exceeded", err)
	}
	if _, err := hns.WithTimeout(c, 50*time.Millisecond).Version(t.Context()); !hns.IsTimeout(err) {
		t.Errorf("through WithTimeout: %v, want a timeout", err)
	}
	ctx, cancel = context.WithCancel(t.Context())
	go func() {
		// Once the call reached the server: the simulator counts it before it waits.
		for s.Counts().Calls[hns.OpVersion] < 3 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if _, err := c.Version(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want canceled", err)
	}
	// The simulator counts a call whose wait its context ended as failed.
	for deadline := time.Now().Add(10 * time.Second); s.Counts().Failed[hns.OpVersion] < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the served calls were not cancelled: %+v", s.Counts())
		}
	}
}

// A call that reaches no server is HNS not running, which says nothing about the object.
func TestUnreachable(t *testing.T) {
	srv, err := hnsrpc.Serve("127.0.0.1:0", sim.MustNew())
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := hnsrpc.NewClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	err = c.DeleteLoadBalancer(t.Context(), "x")
	var he *hns.Error
	if !hns.IsHNSNotRunning(err) || !errors.As(err, &he) || he.Op != hns.OpDeleteLoadBalancer || he.ID != "x" || !strings.Contains(err.Error(), addr) {
		t.Errorf("no server: %v, want HNS not running for the delete of x, naming %s", err, addr)
	}
}

// Neither side uses an address off this machine.
func TestLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "localhost:0", "[::]:0", "127.0.0.1"} {
		if srv, err := hnsrpc.Serve(addr, sim.MustNew()); err == nil {
			_ = srv.Close()
			t.Errorf("Serve(%q) accepted", addr)
		} else if !strings.Contains(err.Error(), addr) {
			t.Errorf("Serve(%q): %v, want the address named", addr, err)
		}
		if _, err := hnsrpc.NewClient(addr); err == nil {
			t.Errorf("NewClient(%q) accepted", addr)
		}
	}
}

// ID lists cross as the text of their IDs, and the client checks that text as it checks HNS's.
func TestIDLists(t *testing.T) {
	s := sim.MustNew()
	n, err := s.AddNetwork(hns.Network{Name: "cbr0", Type: hns.NetworkTypeL2Bridge})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if _, err := s.AddLocalEndpoint("cbr0", fmt.Sprint("pod-", i), netip.AddrFrom4([4]byte{10, 244, byte(i / 250), byte(1 + i%250)})); err != nil {
			t.Fatal(err)
		}
	}
	want, err := s.ListEndpointIDs(t.Context(), n.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := serve(t, s).ListEndpointIDs(t.Context(), n.ID)
	// The simulator lists IDs in no order, as HNS.
	if err != nil || got.Len() != 300 || !slices.Equal(slices.Sorted(got.All()), slices.Sorted(want.All())) {
		t.Errorf("ListEndpointIDs: %d IDs, %v; want the simulator's %d", got.Len(), err, want.Len())
	}
	empty, err := serve(t, sim.MustNew()).ListLoadBalancerIDs(t.Context())
	if err != nil || empty.Len() != 0 {
		t.Errorf("no load balancers: %v, %v", empty, err)
	}

	for answer, want := range map[string]string{
		`["not-a-guid"]`: "is not a GUID",
		`{"a":1}`:        "array of GUIDs",
		`[`:              "ID list",
	} {
		c := answering(t, http.StatusOK, answer)
		if _, err := c.ListLoadBalancerIDs(t.Context()); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "ListLoadBalancerIDs") {
			t.Errorf("answer %s: %v, want %q", answer, err, want)
		}
	}
}

// Answers that are not the server's are errors that say what came.
func TestBadAnswers(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   string
	}{
		{http.StatusNotFound, "404 page not found", "answered 404 Not Found: 404 page not found"},
		{http.StatusInternalServerError, "not JSON", "answered 500 Internal Server Error: not JSON"},
		{http.StatusOK, `{"major":`, "reading the HNS service's answer"},
	} {
		_, err := answering(t, tc.status, tc.body).Version(t.Context())
		if err == nil || !strings.Contains(err.Error(), tc.want) || hns.IsHNSNotRunning(err) {
			t.Errorf("%d %s: %v, want %q", tc.status, tc.body, err, tc.want)
		}
	}
}

// answering is a client of a server that answers every request with status and body.
func answering(t *testing.T, status int, body string) *hnsrpc.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: time.Minute, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	c, err := hnsrpc.NewClient(l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return c
}
