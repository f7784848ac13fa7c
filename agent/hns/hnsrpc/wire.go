// Package hnsrpc serves an hns.Client from one process to another over a Unix socket: a call is
// one frame naming the Client method with its arguments as JSON, its answer one frame with the
// result or the error as JSON, and a Client calls it.
//
// On Windows HNS is a service of its own: the agent's calls are JSON documents that hcsshim hands
// to HNS through a local RPC (a system call, no network and no HTTP), and the objects HNS holds
// are in HNS's memory, not the agent's. A simulated host inside the agent's process (package sim)
// makes the agent's figures include the simulator's heap and CPU; served by another process
// (winproxy-agent run --hns=sim --hns-sim-socket), the simulator costs that process and every
// figure measured for the agent is the agent's alone (BenchmarkAgent in agent/daemon). The
// transport is the nearest this machine has to Windows' local RPC: a Unix socket carries a
// message from one process to another without the TCP/IP stack a loopback address runs both
// sides of on the caller's CPU, and a frame is a length and the JSON, without HTTP's headers to
// write and parse. It is for tests and benchmarks: the socket is a file that only its owner may
// open, and there is no other authentication.
//
// Errors cross intact: an *hns.Error keeps its Op, ID, Code, the sentinel of its Kind and its
// Err, so errors.Is answers on the client as it does beside the implementation for every
// sentinel of package hns and context's. Other errors arrive as their text, still matching the
// most specific of those sentinels they matched. A call that cannot reach the server fails as
// hns.ErrHNSNotRunning, as a call into a stopped HNS service does: it says nothing about the
// object.
package hnsrpc

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/winproxy/winproxy/agent/hns"
)

// request holds the arguments of every Client method; each method sets the ones it takes.
type request struct {
	Name         string            `json:"name,omitempty"`
	NetworkID    string            `json:"networkID,omitempty"`
	ID           string            `json:"id,omitempty"`
	Endpoint     *hns.Endpoint     `json:"endpoint,omitempty"`
	LoadBalancer *hns.LoadBalancer `json:"loadBalancer,omitempty"`
}

// wireError is an error as it crosses: an *hns.Error field by field (HNS set, Err nested), any
// other error as its message and the sentinel it matches.
type wireError struct {
	HNS     bool       `json:"hns,omitempty"`
	Op      hns.Op     `json:"op,omitempty"`
	ID      string     `json:"id,omitempty"`
	Kind    string     `json:"kind,omitempty"`
	Code    hns.Code   `json:"code,omitempty"`
	Err     *wireError `json:"err,omitempty"`
	Message string     `json:"message,omitempty"`
}

// sentinels are the errors whose identity crosses, by name, the more specific before the broader
// they also match.
var sentinels = []struct {
	name string
	err  error
}{
	{"NetworkNotFound", hns.ErrNetworkNotFound},
	{"EndpointNotFound", hns.ErrEndpointNotFound},
	{"LoadBalancerNotFound", hns.ErrLoadBalancerNotFound},
	{"NotFound", hns.ErrNotFound},
	{"PortExists", hns.ErrPortExists},
	{"NotImplemented", hns.ErrNotImplemented},
	{"HNSNotRunning", hns.ErrHNSNotRunning},
	{"InvalidIP", hns.ErrInvalidIP},
	{"Timeout", hns.ErrTimeout},
	{"NotOwned", hns.ErrNotOwned},
	{"Canceled", context.Canceled},
	{"DeadlineExceeded", context.DeadlineExceeded},
}

// kindName names the first sentinel err matches, which for a sentinel is itself; "" for none.
func kindName(err error) string {
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return ""
}

// kindOf is the sentinel a name stands for; nil for none.
func kindOf(name string) error {
	for _, s := range sentinels {
		if s.name == name {
			return s.err
		}
	}
	return nil
}

// encodeError is err as it crosses; nil for nil.
func encodeError(err error) *wireError {
	if err == nil {
		return nil
	}
	var he *hns.Error
	if !errors.As(err, &he) {
		return &wireError{Message: err.Error(), Kind: kindName(err)}
	}
	if err.Error() != he.Error() {
		// An *hns.Error inside another error that says more: the whole's text, and the
		// *hns.Error within.
		return &wireError{Message: err.Error(), Kind: kindName(err), Err: encodeError(he)}
	}
	w := &wireError{HNS: true, Op: he.Op, ID: he.ID, Code: he.Code, Err: encodeError(he.Err)}
	if he.Kind != nil {
		if w.Kind = kindName(he.Kind); w.Kind == "" {
			// A kind this package does not know keeps its text, not its identity.
			msg := he.Kind.Error()
			if he.Err != nil {
				msg += ": " + he.Err.Error()
			}
			w.Err = &wireError{Message: msg}
		}
	}
	return w
}

// decode is the error w stands for; nil for nil.
func (w *wireError) decode() error {
	if w == nil {
		return nil
	}
	if !w.HNS {
		return &remoteError{msg: w.Message, kind: kindOf(w.Kind), inner: w.Err.decode()}
	}
	e := &hns.Error{Op: w.Op, ID: w.ID, Kind: kindOf(w.Kind), Code: w.Code}
	if err := w.Err.decode(); err != nil {
		e.Err = err
	}
	return e
}

// remoteError is an error of the served Client that is not an *hns.Error: its text, the
// sentinel it matched there and the *hns.Error it wrapped, if any.
type remoteError struct {
	msg         string
	kind, inner error
}

func (e *remoteError) Error() string { return e.msg }

func (e *remoteError) Unwrap() []error {
	var out []error
	for _, err := range []error{e.kind, e.inner} {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// A request is one byte giving the length of the method's name (its hns.Op), the name, four
// bytes giving the length of the arguments (big-endian), and the arguments as a JSON object
// (request). An answer is one byte saying what it holds (answerResult, answerError), four bytes
// giving its length, and the result or the error (wireError) as JSON; a delete's result is empty,
// an ID list's the JSON array of its IDs.
const (
	answerResult byte = 0
	answerError  byte = 1
)

// maxRequest bounds a request's arguments: a load balancer's document is a few kilobytes.
const maxRequest = 64 << 20

// maxAnswer bounds an answer's length; an ID list of 120,000 objects is under 5 MB.
const maxAnswer = 1 << 30

// writeFrame writes a frame's head, a kind or a name and then the length of body, and body.
func writeFrame(w *bufio.Writer, head []byte, body []byte) error {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(body)))
	_, _ = w.Write(head)
	_, _ = w.Write(n[:])
	_, _ = w.Write(body)
	return w.Flush()
}

// readBody reads a frame's length and the body of that length, refusing one over most. It comes
// after the frame's head, so an end of the stream is always inside the frame.
func readBody(r *bufio.Reader, most int) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, unexpectedEOF(err)
	}
	size := binary.BigEndian.Uint32(n[:])
	if uint64(size) > uint64(most) {
		return nil, fmt.Errorf("a frame of %d bytes, over the %d allowed", size, most)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, unexpectedEOF(err)
	}
	return body, nil
}

// unexpectedEOF is err, with an end of the stream inside a frame said as such.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// maxSocketPath is the longest socket path every system takes (sockaddr_un's sun_path, less its
// final NUL, is 108 bytes on Linux and Windows and 104 on the BSDs).
const maxSocketPath = 103

// checkSocketPath refuses a path a Unix socket cannot have, saying why rather than the system's
// "invalid argument".
func checkSocketPath(path string) error {
	switch {
	case path == "":
		return errors.New("HNS service socket: the path is empty")
	case len(path) > maxSocketPath:
		return fmt.Errorf("HNS service socket %q: a path of %d bytes, over the %d a Unix socket's may have", path, len(path), maxSocketPath)
	}
	return nil
}
