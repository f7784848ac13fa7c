package hns

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestErrorClassification(t *testing.T) {
	type verdict struct {
		PortExists, NotFound, NotImpl, NotRunning, InvalidIP, NotOwned bool
		Reason                                                         string
	}
	tests := []struct {
		name string
		err  error
		want verdict
	}{
		{"port exists", NewError("CreateLoadBalancer", "", CodePortAlreadyExists, nil), verdict{PortExists: true, Reason: "port_already_exists"}},
		{"0xb7", NewError("CreateLoadBalancer", "", CodeAlreadyExists, nil), verdict{PortExists: true, Reason: "port_already_exists"}},
		{"lb not found", NewError("GetLoadBalancer", "X", CodeElementNotFound, ErrLoadBalancerNotFound), verdict{NotFound: true, Reason: "not_found"}},
		{"network not found", NewError("GetNetworkByName", "n", CodeNetworkNotFound, nil), verdict{NotFound: true, Reason: "network_not_found"}},
		{"endpoint not found", NewError("DeleteEndpoint", "e", CodeEndpointNotFound, nil), verdict{NotFound: true, Reason: "not_found"}},
		{"notimpl", NewError("ModifyLoadBalancer", "", CodeNotImplemented, nil), verdict{NotImpl: true, Reason: "not_implemented"}},
		{"not running", NewError("ListLoadBalancers", "", CodeHNSNotRunning, nil), verdict{NotRunning: true, Reason: "hns_not_running"}},
		{"invalid ip", NewError("CreateEndpoint", "", CodeInvalidIP, nil), verdict{InvalidIP: true, Reason: "invalid_ip"}},
		{"not owned", &Error{Op: "DeleteLoadBalancer", Kind: ErrNotOwned}, verdict{NotOwned: true, Reason: "other"}},
		{"wrapped", fmt.Errorf("sync: %w", NewError("CreateLoadBalancer", "", CodePortAlreadyExists, nil)), verdict{PortExists: true, Reason: "port_already_exists"}},
		{"other", errors.New("boom"), verdict{Reason: "other"}},
		{"nil", nil, verdict{Reason: "none"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := verdict{
				PortExists: IsPortExists(tt.err), NotFound: IsNotFound(tt.err), NotImpl: IsNotImplemented(tt.err),
				NotRunning: IsHNSNotRunning(tt.err), InvalidIP: IsInvalidIP(tt.err), NotOwned: IsNotOwned(tt.err),
				Reason: Reason(tt.err),
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorTextCarriesCode(t *testing.T) {
	cause := errors.New("hcn failure")
	e := &Error{Op: "CreateLoadBalancer", Kind: ErrPortExists, Code: CodePortAlreadyExists, Err: cause}
	if s := e.Error(); !strings.Contains(s, "0x803b0013") || !strings.Contains(s, "hcn failure") {
		t.Errorf("Error() = %q, want code and cause", s)
	}
	if !errors.Is(e, cause) {
		t.Error("cause not reachable with errors.Is")
	}
	if !errors.Is(ErrLoadBalancerNotFound, ErrNotFound) || errors.Is(ErrNotFound, ErrLoadBalancerNotFound) {
		t.Error("not-found hierarchy is wrong")
	}
}

// HRESULTs of the Win32 facility classify as the Win32 codes they wrap, as hcsshim's generated
// wrappers convert them: the raw ID enumerations answer "HNS not running" and "not found" that
// way, and must not fall back to a full list nor count under "other".
func TestNormalizeCode(t *testing.T) {
	for _, tc := range []struct {
		raw    uint32
		want   Code
		reason string
	}{
		{0x800706B5, CodeHNSNotRunning, "hns_not_running"},
		{0x80070490, CodeElementNotFound, "not_found"},
		{0x800700B7, CodeAlreadyExists, "port_already_exists"},
		{0x6B5, CodeHNSNotRunning, "hns_not_running"},
		{0x490, CodeElementNotFound, "not_found"},
		{0x803B0013, CodePortAlreadyExists, "port_already_exists"},
		{0x803B0002, CodeEndpointNotFound, "not_found"},
		{0x80004001, CodeNotImplemented, "not_implemented"},
		{0x80004005, 0x80004005, "other"}, // E_FAIL: not of the Win32 facility
		{0xC0070005, 0x5, "other"},        // any severity bits of the Win32 facility
	} {
		got := NormalizeCode(tc.raw)
		if got != tc.want {
			t.Errorf("NormalizeCode(%#x) = %#x, want %#x", tc.raw, uint32(got), uint32(tc.want))
		}
		if r := Reason(NewError(OpListLoadBalancerIDs, "", got, ErrLoadBalancerNotFound)); r != tc.reason {
			t.Errorf("%#x classifies as %s, want %s", tc.raw, r, tc.reason)
		}
	}
}
