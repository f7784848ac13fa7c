package hnsrpc

import (
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/winproxy/winproxy/agent/hns/sim"
)

// The client's connection blocks its thread in a call, as an HCN call does on Windows, rather
// than parking on Go's network poller: what BenchmarkAgent measures of a call depends on it. A
// connection refused (a socket file whose server is gone) fails at once.
func TestSocketBlocks(t *testing.T) {
	srv, err := Serve(filepath.Join(t.TempDir(), "hns.sock"), sim.MustNew())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s, err := dial(t.Context(), srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rc, err := s.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	var flagErr error
	if err := rc.Control(func(fd uintptr) { flags, flagErr = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil || flagErr != nil {
		t.Fatal(err, flagErr)
	}
	if flags&unix.O_NONBLOCK != 0 {
		t.Errorf("the connection's flags %#x hold O_NONBLOCK: its calls would park on the network poller", flags)
	}

	// A socket file no server listens on: bound, never listening.
	path := filepath.Join(t.TempDir(), "dead.sock")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if _, err := dial(t.Context(), path); err == nil {
		t.Errorf("dial %s with no listener: no error", path)
	}
}
