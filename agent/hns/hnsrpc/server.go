package hnsrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/winproxy/winproxy/agent/hns"
)

// Server serves an hns.Client on a Unix socket until Close.
type Server struct {
	l       net.Listener
	methods map[hns.Op]method
	wg      sync.WaitGroup
	mu      sync.Mutex
	// conns are the open connections, closed by Close; nil once closed.
	conns map[net.Conn]struct{}
}

// Serve listens on a new Unix socket at path, which only its owner may open, and serves c there
// until Close, which removes it.
func Serve(path string, c hns.Client) (*Server, error) {
	if err := checkSocketPath(path); err != nil {
		return nil, err
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	// Whoever can open the socket programs the host. The mode is set once it exists; the tests
	// and benchmarks that serve a host make it in a folder of their own.
	if err := os.Chmod(path, 0o600); err != nil {
		_ = l.Close()
		return nil, err
	}
	s := &Server{l: l, methods: methods(c), conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr is the socket's path, for a Client or --hns-sim-socket.
func (s *Server) Addr() string { return s.l.Addr().String() }

// Close stops serving and removes the socket. Calls in progress lose their connection, which
// cancels their context.
func (s *Server) Close() error {
	err := s.l.Close()
	s.mu.Lock()
	for nc := range s.conns {
		_ = nc.Close()
	}
	s.conns = nil
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// accept serves each connection on a goroutine of its own until the listener closes; any other
// error of Accept ends serving the same way.
func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.l.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		open := s.conns != nil
		if open {
			s.conns[nc] = struct{}{}
			s.wg.Add(1)
		}
		s.mu.Unlock()
		if !open {
			_ = nc.Close()
			return
		}
		go s.serveConn(nc)
	}
}

// serveConn answers the requests of one connection in turn, until the client closes it or sends
// what is not a request.
func (s *Server) serveConn(nc net.Conn) {
	defer s.wg.Done()
	defer func() {
		_ = nc.Close()
		s.mu.Lock()
		delete(s.conns, nc) // a no-op once closed: deleting from a nil map is
		s.mu.Unlock()
	}()
	r, w := bufio.NewReader(nc), bufio.NewWriter(nc)
	for {
		op, body, err := readRequest(r)
		switch {
		case errors.Is(err, io.EOF):
			return // the client closed a connection it kept between calls
		case err != nil:
			// Nothing frames the next request after one that cannot be read: answer, and close.
			_ = writeFrame(w, []byte{answerError}, errorText(errors.New("hnsrpc: reading the request: "+err.Error())))
			return
		}
		kind, out, ok := s.call(nc, r, op, body)
		if !ok || writeFrame(w, []byte{kind}, out) != nil {
			return
		}
	}
}

// readRequest reads a request's method and its arguments' text.
func readRequest(r *bufio.Reader) (hns.Op, []byte, error) {
	n, err := r.ReadByte()
	if err != nil {
		return "", nil, err // io.EOF between requests is the client's close
	}
	name := make([]byte, n)
	if _, err := io.ReadFull(r, name); err != nil {
		return "", nil, unexpectedEOF(err)
	}
	body, err := readBody(r, maxRequest)
	if err != nil {
		return "", nil, err
	}
	return hns.Op(name), body, nil
}

// call makes one call and returns its answer. While the method runs the server watches the
// connection: the client sends nothing until it has its answer, so a read that ends means the
// client went away (its context ended and it closed the connection) or broke the protocol, and
// the call's context is cancelled; ok is false then, and there is nobody to answer.
func (s *Server) call(nc net.Conn, r *bufio.Reader, op hns.Op, body []byte) (kind byte, out []byte, ok bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	left := make(chan bool, 1)
	go func() {
		_, err := r.Peek(1)
		// The deadline set below ends the watch once the call returned; anything else is the
		// client's doing.
		gone := err == nil || !errors.Is(err, os.ErrDeadlineExceeded)
		if gone {
			cancel()
		}
		left <- gone
	}()
	v, err := s.serve(ctx, op, body)
	_ = nc.SetReadDeadline(time.Unix(1, 0))
	gone := <-left
	_ = nc.SetReadDeadline(time.Time{})
	if gone {
		return 0, nil, false
	}
	if err == nil {
		if out, err = encodeAnswer(v); err == nil {
			return answerResult, out, true
		}
	}
	return answerError, errorText(err), true
}

// serve decodes a request's arguments and calls its method.
func (s *Server) serve(ctx context.Context, op hns.Op, body []byte) (any, error) {
	m, ok := s.methods[op]
	if !ok {
		return nil, fmt.Errorf("hnsrpc: no method %q", op)
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, errors.New("hnsrpc: reading the request: " + err.Error())
	}
	return m(ctx, req)
}

// errorText is err as it crosses, in JSON.
func errorText(err error) []byte {
	out, _ := json.Marshal(encodeError(err)) // a wireError holds strings and numbers only: it encodes
	return out
}

// method is one Client method, its arguments taken from a request.
type method func(ctx context.Context, r request) (any, error)

// answer turns a method's two results into method's.
func answer[T any](v T, err error) (any, error) { return v, err }

func methods(c hns.Client) map[hns.Op]method {
	return map[hns.Op]method{
		hns.OpVersion:          func(ctx context.Context, _ request) (any, error) { return answer(c.Version(ctx)) },
		hns.OpGetNetworkByName: func(ctx context.Context, r request) (any, error) { return answer(c.GetNetworkByName(ctx, r.Name)) },
		hns.OpListEndpoints:    func(ctx context.Context, r request) (any, error) { return answer(c.ListEndpoints(ctx, r.NetworkID)) },
		hns.OpGetEndpointByName: func(ctx context.Context, r request) (any, error) {
			return answer(c.GetEndpointByName(ctx, r.Name))
		},
		hns.OpCreateEndpoint: func(ctx context.Context, r request) (any, error) {
			return answer(c.CreateEndpoint(ctx, r.NetworkID, deref(r.Endpoint)))
		},
		hns.OpDeleteEndpoint:    func(ctx context.Context, r request) (any, error) { return nil, c.DeleteEndpoint(ctx, r.ID) },
		hns.OpListLoadBalancers: func(ctx context.Context, _ request) (any, error) { return answer(c.ListLoadBalancers(ctx)) },
		hns.OpListEndpointIDs:   func(ctx context.Context, r request) (any, error) { return answer(c.ListEndpointIDs(ctx, r.NetworkID)) },
		hns.OpListLoadBalancerIDs: func(ctx context.Context, _ request) (any, error) {
			return answer(c.ListLoadBalancerIDs(ctx))
		},
		hns.OpGetLoadBalancer: func(ctx context.Context, r request) (any, error) { return answer(c.GetLoadBalancer(ctx, r.ID)) },
		hns.OpCreateLoadBalancer: func(ctx context.Context, r request) (any, error) {
			return answer(c.CreateLoadBalancer(ctx, deref(r.LoadBalancer)))
		},
		hns.OpModifyLoadBalancer: func(ctx context.Context, r request) (any, error) {
			return answer(c.ModifyLoadBalancer(ctx, r.ID, deref(r.LoadBalancer)))
		},
		hns.OpDeleteLoadBalancer: func(ctx context.Context, r request) (any, error) { return nil, c.DeleteLoadBalancer(ctx, r.ID) },
	}
}

// deref is *p, or the zero T for nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// encodeAnswer is a method's result as JSON; an ID list is the text of its IDs.
func encodeAnswer(v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case hns.IDList:
		return idListText(v), nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, errors.New("hnsrpc: encoding the answer: " + err.Error())
	}
	return out, nil
}

// idListText is the JSON array of l's IDs. Every ID of an IDList is a GUID (hns.ParseIDList), whose
// text needs no escaping.
func idListText(l hns.IDList) []byte {
	out := make([]byte, 0, 2+l.Len()*len(`"00000000-0000-0000-0000-000000000000",`))
	out = append(out, '[')
	for id := range l.All() {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(append(out, '"'), id...), '"')
	}
	return append(out, ']')
}
