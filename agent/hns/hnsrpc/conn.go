package hnsrpc

import (
	"bufio"
	"context"
	"fmt"
	"sync"

	"github.com/winproxy/winproxy/agent/hns"
)

// pool holds the client's connections between calls. A call writes its request and reads the
// answer on the caller's goroutine: net/http's client hands every request to two goroutines of
// its own per connection, and with it an EndpointSlice event cost the agent 40 % more CPU in
// BenchmarkAgent (2.98 against 2.12 ms at 2k services, four HNS calls an event), a cost an HCN
// call on Windows, a blocking system call, does not have. On Linux the socket blocks as that call
// does (socket_linux.go).
type pool struct {
	path string
	mu   sync.Mutex
	idle []*conn
}

// conn is one connection to the server, kept between calls.
type conn struct {
	socket
	r *bufio.Reader
	w *bufio.Writer
	// head holds a request's head (the method's name and its length), so that writing one
	// allocates nothing.
	head [64]byte
}

// brokenAnswer is an answer that began to arrive and cannot be read: unlike a call that got no
// answer, it does not say that the server is gone.
type brokenAnswer struct{ err error }

func (b brokenAnswer) Error() string { return b.err.Error() }
func (b brokenAnswer) Unwrap() error { return b.err }

// exchange sends one request (the method op with its arguments, body) on an idle connection, or a
// new one, and reads its answer: its kind and its text. The context bounds the whole exchange:
// when it ends, the exchange is aborted (socket.abort), fails, and the connection is closed,
// which tells the server to cancel the call.
func (p *pool) exchange(ctx context.Context, op hns.Op, body []byte) (byte, []byte, error) {
	c, err := p.get(ctx)
	if err != nil {
		return 0, nil, err
	}
	// Only once the context has ended (its Err set, so that the caller reports it) is the
	// exchange aborted.
	stop := context.AfterFunc(ctx, c.abort)
	kind, text, err := c.exchange(op, body)
	if !stop() || err != nil {
		// The context's end may have cut the exchange short; the connection is unusable either way.
		_ = c.Close()
		return kind, text, err
	}
	p.put(c)
	return kind, text, nil
}

func (c *conn) exchange(op hns.Op, body []byte) (byte, []byte, error) {
	if len(op) >= len(c.head) {
		return 0, nil, fmt.Errorf("hnsrpc: a method name of %d bytes", len(op))
	}
	head := append(append(c.head[:0], byte(len(op))), op...)
	if err := writeFrame(c.w, head, body); err != nil {
		return 0, nil, err
	}
	kind, err := c.r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	text, err := readBody(c.r, maxAnswer)
	if err != nil {
		return 0, nil, brokenAnswer{err}
	}
	return kind, text, nil
}

// get takes an idle connection, or dials one.
func (p *pool) get(ctx context.Context) (*conn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	s, err := dial(ctx, p.path)
	if err != nil {
		return nil, err
	}
	return &conn{socket: s, r: bufio.NewReader(s), w: bufio.NewWriter(s)}, nil
}

// maxIdle is how many connections are kept between calls: the agent calls HNS one call at a time.
const maxIdle = 4

// put keeps a connection for the next call.
func (p *pool) put(c *conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) >= maxIdle {
		_ = c.Close()
		return
	}
	p.idle = append(p.idle, c)
}

// close closes the idle connections.
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.idle {
		_ = c.Close()
	}
	p.idle = nil
}
