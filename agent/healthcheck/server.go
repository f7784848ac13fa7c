package healthcheck

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server serves a handler on an address that can move while the agent runs: the proxy health
// server's port comes from the node's WindowsProxyNode, which may change. A Server that failed to
// listen tries again on the next Serve.
type Server struct {
	handler http.Handler

	mu   sync.Mutex
	addr string
	srv  *http.Server
}

// NewServer returns a Server that is not listening yet.
func NewServer(h http.Handler) *Server { return &Server{handler: h} }

// Serve makes the server listen on addr, closing the listener of a previous address. It returns
// the listen error, if any; the server then listens nowhere until the next Serve succeeds.
func (s *Server) Serve(addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil && s.addr == addr {
		return nil
	}
	s.closeLocked()
	srv, err := listenAndServe(addr, s.handler)
	if err != nil {
		return err
	}
	s.srv, s.addr = srv, addr
	return nil
}

// Addr is the address the server listens on, or "" when it is not listening.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Close stops listening.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked()
}

func (s *Server) closeLocked() {
	if s.srv != nil {
		_ = s.srv.Close()
	}
	s.srv, s.addr = nil, ""
}

// The health servers face whatever reaches the node, not only the load balancers that probe it,
// and a probe is a GET of a few hundred bytes: a request's headers are bounded to a few KiB (net/http
// allows 1 MiB, which let 200 connections take 300 MB), and a client that is slow to send them or to
// read the answer is dropped, so that neither slow nor idle clients pile up connections.
const (
	maxHeaderBytes = 4 << 10
	readTimeout    = 5 * time.Second
)

// listenAndServe binds addr before returning, so that a port in use is reported to the caller
// instead of being lost in a goroutine.
func listenAndServe(addr string, h http.Handler) (*http.Server, error) {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, MaxHeaderBytes: maxHeaderBytes, ReadHeaderTimeout: readTimeout,
		ReadTimeout: readTimeout, WriteTimeout: readTimeout, IdleTimeout: 30 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = l.Close()
		}
	}()
	return srv, nil
}
