package hns

import (
	"errors"
	"fmt"
)

// Code is a Win32 error code or HRESULT as HNS returns it.
type Code uint32

// The codes winkernel reacts to (docs/design/dataplane.md#hns-errors).
const (
	CodePortAlreadyExists Code = 0x803B0013 // HCN_E_PORT_ALREADY_EXISTS
	CodeAlreadyExists     Code = 0xB7       // ERROR_ALREADY_EXISTS, also seen for LB conflicts
	CodeNotImplemented    Code = 0x80004001 // E_NOTIMPL (modify on old HNS)
	CodeHNSNotRunning     Code = 0x6B5      // RPC_S_UNKNOWN_IF: the HNS service is down/restarting
	CodeInvalidIP         Code = 0x803B001E // HCN_E_INVALID_IP
	CodeNetworkNotFound   Code = 0x803B0001 // HCN_E_NETWORK_NOT_FOUND
	CodeEndpointNotFound  Code = 0x803B0002 // HCN_E_ENDPOINT_NOT_FOUND
	CodeElementNotFound   Code = 0x490      // ERROR_NOT_FOUND
)

// kind is a sentinel that can also match a broader parent sentinel, so
// errors.Is(ErrLoadBalancerNotFound, ErrNotFound) holds.
type kind struct {
	msg    string
	parent error
}

func (k *kind) Error() string        { return k.msg }
func (k *kind) Is(target error) bool { return k.parent != nil && target == k.parent }

// Sentinel errors; compare with errors.Is or the Is* helpers.
var (
	// ErrPortExists: an object with the same key already exists
	// (0x803B0013 or 0xb7). For load balancers: the frontend tuple is taken.
	ErrPortExists           error = &kind{msg: "port or object already exists"}
	ErrNotFound             error = &kind{msg: "not found"}
	ErrNetworkNotFound      error = &kind{msg: "network not found", parent: ErrNotFound}
	ErrEndpointNotFound     error = &kind{msg: "endpoint not found", parent: ErrNotFound}
	ErrLoadBalancerNotFound error = &kind{msg: "load balancer not found", parent: ErrNotFound}
	ErrNotImplemented       error = &kind{msg: "not implemented"}
	ErrHNSNotRunning        error = &kind{msg: "HNS not running"}
	ErrInvalidIP            error = &kind{msg: "invalid IP"}
	// ErrTimeout is winproxy's own: the call did not return within the agent's HNS call timeout
	// (see WithTimeout). It says nothing about the object.
	ErrTimeout error = &kind{msg: "timed out"}
	// ErrNotOwned is winproxy's own refusal to change an object it did not
	// create; HNS never returns it.
	ErrNotOwned error = &kind{msg: "object not owned by winproxy"}
)

// Error is an HNS call failure: which operation, on what, which code, and
// the underlying error of the implementation (if any).
type Error struct {
	Op   Op     // e.g. OpCreateLoadBalancer
	ID   string // object ID or name, when known
	Kind error  // one of the sentinels, or nil if unclassified
	Code Code   // 0 if unknown
	Err  error  // implementation error (hcsshim's), may be nil
}

func (e *Error) Error() string {
	s := "hns: " + string(e.Op)
	if e.ID != "" {
		s += " " + e.ID
	}
	switch {
	case e.Kind != nil:
		s += ": " + e.Kind.Error()
	case e.Err != nil:
		s += ": " + e.Err.Error()
	}
	// Always print the code in winkernel's text form (e.g. 0x803b0013) so
	// logs can be grepped the same way upstream's are.
	if e.Code != 0 {
		s += fmt.Sprintf(" (0x%x)", uint32(e.Code))
	}
	if e.Kind != nil && e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap exposes both the sentinel and the implementation error.
func (e *Error) Unwrap() []error {
	var out []error
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// NormalizeCode turns an HRESULT of the Win32 facility (0x8007xxxx) into the Win32 code it wraps,
// as hcsshim's generated wrappers do with every HCN call's result (r0&0x1fff0000 == 0x00070000:
// r0 &= 0xffff). A raw call that skips them (the ID enumerations) answers "HNS not running" as
// 0x800706B5 and "not found" as 0x80070490; this package's vocabulary has the Win32 codes. Any
// other code is kept as it is. Every Windows call path classifies its code through it.
func NormalizeCode(c uint32) Code {
	if c&0x1fff0000 == 0x00070000 {
		return Code(c & 0xffff)
	}
	return Code(c)
}

// KindForCode classifies an HNS code; nil for codes winproxy treats as
// "other". notFound is the sentinel to use for a generic not-found code,
// because only the caller knows which object type it looked for.
func KindForCode(c Code, notFound error) error {
	switch c {
	case CodePortAlreadyExists, CodeAlreadyExists:
		return ErrPortExists
	case CodeNotImplemented:
		return ErrNotImplemented
	case CodeHNSNotRunning:
		return ErrHNSNotRunning
	case CodeInvalidIP:
		return ErrInvalidIP
	case CodeNetworkNotFound:
		return ErrNetworkNotFound
	case CodeEndpointNotFound:
		return ErrEndpointNotFound
	case CodeElementNotFound:
		if notFound == nil {
			return ErrNotFound
		}
		return notFound
	}
	return nil
}

// NewError builds an *Error for op with the given code, classified.
func NewError(op Op, id string, c Code, notFound error) *Error {
	return &Error{Op: op, ID: id, Kind: KindForCode(c, notFound), Code: c}
}

// IsPortExists reports a port/object-already-exists error (0x803B0013, 0xb7).
func IsPortExists(err error) bool { return errors.Is(err, ErrPortExists) }

// IsNotFound reports any not-found error (network, endpoint, load balancer).
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsNotImplemented reports E_NOTIMPL, e.g. modify on HNS without support.
func IsNotImplemented(err error) bool { return errors.Is(err, ErrNotImplemented) }

// IsHNSNotRunning reports 0x6b5. Such a failure says nothing about the
// object: a delete failing this way must not be taken as "already gone".
func IsHNSNotRunning(err error) bool { return errors.Is(err, ErrHNSNotRunning) }

// IsInvalidIP reports HCN_E_INVALID_IP.
func IsInvalidIP(err error) bool { return errors.Is(err, ErrInvalidIP) }

// IsTimeout reports a call that did not return within the agent's HNS call timeout.
func IsTimeout(err error) bool { return errors.Is(err, ErrTimeout) }

// IsNotOwned reports winproxy's refusal to touch a foreign object.
func IsNotOwned(err error) bool { return errors.Is(err, ErrNotOwned) }

// Reason maps an error to the short label winkernel uses for failure
// metrics: network_not_found, port_already_exists, not_implemented,
// invalid_ip, hns_not_running, timeout or other.
func Reason(err error) string {
	switch {
	case err == nil:
		return "none"
	case errors.Is(err, ErrNetworkNotFound):
		return "network_not_found"
	case IsPortExists(err):
		return "port_already_exists"
	case IsNotImplemented(err):
		return "not_implemented"
	case IsInvalidIP(err):
		return "invalid_ip"
	case IsHNSNotRunning(err):
		return "hns_not_running"
	case IsTimeout(err):
		return "timeout"
	case IsNotFound(err):
		return "not_found"
	}
	return "other"
}
