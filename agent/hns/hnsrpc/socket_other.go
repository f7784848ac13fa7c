//go:build !linux

package hnsrpc

import (
	"context"
	"net"
	"time"
)

// socket is a connection on Go's network poller: where the blocking socket of socket_linux.go is
// not built, the simulator still serves the agent, at a cost BenchmarkAgent does not measure.
type socket struct{ net.Conn }

// dial connects to the Unix socket at path.
func dial(ctx context.Context, path string) (socket, error) {
	nc, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "unix", path)
	return socket{nc}, err
}

// abort ends the exchange in progress: its deadline passes.
func (s socket) abort() { _ = s.SetDeadline(time.Unix(1, 0)) }
