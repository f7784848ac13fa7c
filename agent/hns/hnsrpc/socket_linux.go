package hnsrpc

import (
	"context"
	"fmt"
	"os"
	"syscall"
)

// socket is a connection whose reads and writes are system calls that block their thread until
// the server answers, as an HCN call on Windows does (hcsshim calls computenetwork.dll, which
// waits for the HNS service). Go's runtime then handles a call as it handles one to HNS: the
// thread leaves its processor to another while it waits, instead of the goroutine parking on the
// network poller. BenchmarkAgent measures what the agent's side of a call costs through it.
type socket struct{ *os.File }

// dial connects to the Unix socket at path. A Unix socket's connect completes at once or fails
// (EAGAIN when the server is not accepting and its backlog is full), so it is made without
// blocking and needs no deadline; the socket blocks from then on.
func dial(_ context.Context, path string) (socket, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, 0)
	if err != nil {
		return socket{}, os.NewSyscallError("socket", err)
	}
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		_ = syscall.Close(fd)
		return socket{}, fmt.Errorf("dial unix %s: %w", path, os.NewSyscallError("connect", err))
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		_ = syscall.Close(fd)
		return socket{}, os.NewSyscallError("fcntl", err)
	}
	return socket{os.NewFile(uintptr(fd), path)}, nil
}

// abort ends the exchange in progress: its blocked read or write returns, and the server sees
// the connection end, which cancels its call. Control holds the file open meanwhile, so a Close
// that raced it cannot have freed the descriptor for another file.
func (s socket) abort() {
	if rc, err := s.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _ = syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
	}
}
