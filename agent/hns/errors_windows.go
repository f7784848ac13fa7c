//go:build windows

package hns

import (
	"errors"
	"strings"
	"syscall"

	"github.com/Microsoft/hcsshim/hcn"
)

// translateErr classifies an hcsshim error into this package's vocabulary,
// keeping the original as the wrapped cause. notFound names the object type
// the operation was about, for hcsshim's generic not-found answers.
func translateErr(op Op, id string, err error, notFound error) error {
	e := &Error{Op: op, ID: id, Err: err, Code: codeOf(err)}
	e.Kind = KindForCode(e.Code, notFound)
	if e.Kind != nil {
		return e
	}
	switch {
	case isShimNotFound(err):
		e.Kind = notFound
	// hcsshim does not always surface the code as a value (e.g. RPC
	// failures while HNS restarts); winkernel matches the text, so do we.
	case strings.Contains(err.Error(), "0x6b5"):
		e.Kind, e.Code = ErrHNSNotRunning, CodeHNSNotRunning
	case strings.Contains(err.Error(), "0xb7"):
		e.Kind, e.Code = ErrPortExists, CodeAlreadyExists
	}
	return e
}

// isShimNotFound covers hcsshim's own (code-less) not-found error types.
func isShimNotFound(err error) bool {
	if e := (hcn.NetworkNotFoundError{}); errors.As(err, &e) {
		return true
	}
	if e := (hcn.EndpointNotFoundError{}); errors.As(err, &e) {
		return true
	}
	if e := (hcn.LoadBalancerNotFoundError{}); errors.As(err, &e) {
		return true
	}
	return hcn.IsNotFoundError(err)
}

// codeOf extracts the Win32/HRESULT code of an HCN error, 0 if none, normalised (NormalizeCode).
func codeOf(err error) Code {
	var he *hcn.HcnError
	if errors.As(err, &he) && he.HcsError != nil {
		var errno syscall.Errno
		if errors.As(he.Err, &errno) {
			return NormalizeCode(uint32(errno))
		}
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return NormalizeCode(uint32(errno))
	}
	return 0
}
