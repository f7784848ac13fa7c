// Package hnsrpc serves an hns.Client from one process to another over loopback: JSON over
// HTTP/1.1, one POST endpoint per Client method (/v1/<hns.Op>), and a Client that calls it.
//
// On Windows HNS is a service of its own: the agent's calls are JSON documents sent to it
// (hcsshim), and the objects HNS holds are in HNS's memory, not the agent's. A simulated host
// inside the agent's process (package sim) makes the agent's figures include the simulator's
// heap and CPU; served by another process (winproxy-agent run --hns=sim --hns-sim-address), the
// simulator costs that process and every figure measured for the agent is the agent's alone
// (BenchmarkAgent in agent/daemon). It is for tests and benchmarks: it listens and connects on
// loopback addresses only, without authentication.
//
// Errors cross intact: an *hns.Error keeps its Op, ID, Code, the sentinel of its Kind and its
// Err, so errors.Is answers on the client as it does beside the implementation for every
// sentinel of package hns and context's. Other errors arrive as their text, still matching the
// most specific of those sentinels they matched. A call that cannot reach the server fails as
// hns.ErrHNSNotRunning, as a call into a stopped HNS service does: it says nothing about the
// object.
package hnsrpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

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

// checkLoopback refuses an address that is not a loopback IP and port: the server and its
// clients are for tests and benchmarks on one machine.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("HNS service address %q: %w", addr, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("HNS service address %q: want a loopback IP and port, such as 127.0.0.1:9000 or [::1]:9000", addr)
	}
	return nil
}
