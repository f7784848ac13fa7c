package hnsrpc_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/hnsrpc"
	"github.com/winproxy/winproxy/agent/hns/hnstest"
	"github.com/winproxy/winproxy/agent/hns/sim"
)

// socket is a path for a Unix socket in a folder of the test's own.
func socket(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "hns.sock")
}

// serve serves c on a socket of the test's own and returns a client of it.
func serve(t *testing.T, c hns.Client) *hnsrpc.Client {
	t.Helper()
	srv, err := hnsrpc.Serve(socket(t), c)
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
	srv, err := hnsrpc.Serve(socket(t), sim.MustNew())
	if err != nil {
		t.Fatal(err)
	}
	path := srv.Addr()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the socket after Close: %v, want it removed", err)
	}
	c, err := hnsrpc.NewClient(path)
	if err != nil {
		t.Fatal(err)
	}
	err = c.DeleteLoadBalancer(t.Context(), "x")
	var he *hns.Error
	if !hns.IsHNSNotRunning(err) || !errors.As(err, &he) || he.Op != hns.OpDeleteLoadBalancer || he.ID != "x" || !strings.Contains(err.Error(), path) {
		t.Errorf("no server: %v, want HNS not running for the delete of x, naming %s", err, path)
	}
}

// The socket is its owner's alone, and a path no socket can have is refused with why.
func TestSocketPaths(t *testing.T) {
	srv, err := hnsrpc.Serve(socket(t), sim.MustNew())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if fi, err := os.Stat(srv.Addr()); err != nil || fi.Mode()&fs.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("the socket %s: %v, %v; want a socket only its owner may open", srv.Addr(), fi.Mode(), err)
	}
	long := "/tmp/" + strings.Repeat("x", 110)
	for path, want := range map[string]string{"": "the path is empty", long: "over the 103 a Unix socket's may have"} {
		if srv, err := hnsrpc.Serve(path, sim.MustNew()); err == nil {
			_ = srv.Close()
			t.Errorf("Serve(%q) accepted", path)
		} else if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("Serve(%q): %v, want %q and the path", path, err, want)
		}
		if _, err := hnsrpc.NewClient(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewClient(%q): %v, want %q", path, err, want)
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
		c := answering(t, frame(0, answer))
		if _, err := c.ListLoadBalancerIDs(t.Context()); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "ListLoadBalancerIDs") {
			t.Errorf("answer %s: %v, want %q", answer, err, want)
		}
	}
}

// Answers that are not the server's are errors that say what came, not a server that is gone.
func TestBadAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer []byte
		want   string
	}{
		{"a kind of frame no server sends", frame(7, "what"), "answered a frame of unknown kind 7: what"},
		{"an error that is not JSON", frame(1, "not JSON"), "answered an error that cannot be read: not JSON"},
		{"a result that is not JSON", frame(0, `{"major":`), "reading the HNS service's answer"},
		{"a frame longer than any answer", []byte{0, 0xff, 0xff, 0xff, 0xff}, "answered with a broken frame: a frame of 4294967295 bytes, over the"},
		{"a frame cut short", frame(0, `{"major":13,"minor":3}`)[:12], "answered with a broken frame: unexpected EOF"},
	} {
		_, err := answering(t, tc.answer).Version(t.Context())
		if err == nil || !strings.Contains(err.Error(), tc.want) || hns.IsHNSNotRunning(err) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// A request over the 64 MiB a server reads is refused before it is sent: it says so, and does not
// claim that HNS is gone.
func TestRequestTooLong(t *testing.T) {
	s := sim.MustNew()
	_, err := serve(t, s).GetEndpointByName(t.Context(), strings.Repeat("x", 64<<20))
	if err == nil || !strings.Contains(err.Error(), "over the 67108864 allowed") || hns.IsHNSNotRunning(err) {
		t.Errorf("a request of 64 MiB and more: %v, want it refused as too long", err)
	}
	if n := s.Counts().Calls[hns.OpGetEndpointByName]; n != 0 {
		t.Errorf("the server answered %d calls, want none", n)
	}
}

// frame is an answer of kind with text.
func frame(kind byte, text string) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{kind}, uint32(len(text))), text...)
}

// answering is a client of a server that reads one request and answers it with answer, then
// closes the connection.
func answering(t *testing.T, answer []byte) *hnsrpc.Client {
	t.Helper()
	l, err := net.Listen("unix", socket(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		nc, err := l.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		if _, err := readRequest(nc); err == nil {
			_, _ = nc.Write(answer)
		}
	}()
	c, err := hnsrpc.NewClient(l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// readRequest reads one request off r as the server does and returns its method.
func readRequest(r io.Reader) (string, error) {
	var n [1]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return "", err
	}
	name := make([]byte, n[0])
	var size [4]byte
	if _, err := io.ReadFull(r, name); err != nil {
		return "", err
	}
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return "", err
	}
	_, err := io.CopyN(io.Discard, r, int64(binary.BigEndian.Uint32(size[:])))
	return string(name), err
}

// The server answers a request it cannot serve with an error that says why, and closes a
// connection whose requests it can no longer tell apart.
func TestBadRequests(t *testing.T) {
	srv, err := hnsrpc.Serve(socket(t), sim.MustNew())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	request := func(name, args string) []byte {
		return append(binary.BigEndian.AppendUint32(append([]byte{byte(len(name))}, name...), uint32(len(args))), args...)
	}
	nc, err := net.Dial("unix", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	for _, tc := range []struct {
		request []byte
		want    string
	}{
		{request("Reboot", `{}`), `hnsrpc: no method \"Reboot\"`},
		{request(string(hns.OpGetLoadBalancer), `{"id":`), "hnsrpc: reading the request: unexpected end of JSON input"},
		// The same connection still serves: those requests were whole.
		{request(string(hns.OpVersion), `{}`), `{"major":`},
		// Arguments over the 64 MiB a request may have: the connection is closed after the answer.
		{binary.BigEndian.AppendUint32([]byte{1, 'x'}, 1<<30), "hnsrpc: reading the request: a frame of 1073741824 bytes, over the"},
	} {
		if _, err := nc.Write(tc.request); err != nil {
			t.Fatal(err)
		}
		var head [5]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			t.Fatal(err)
		}
		text := make([]byte, binary.BigEndian.Uint32(head[1:]))
		if _, err := io.ReadFull(r, text); err != nil || !strings.Contains(string(text), tc.want) {
			t.Errorf("answer %d %s, %v; want %s", head[0], text, err, tc.want)
		}
	}
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("after a request it could not frame, the server kept the connection: %v", err)
	}
}
