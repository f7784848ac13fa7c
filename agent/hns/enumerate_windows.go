//go:build windows

package hns

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/Microsoft/hcsshim/hcn"
	"golang.org/x/sys/windows"
)

// hcsshim calls HcnEnumerateEndpoints and HcnEnumerateLoadBalancers only inside its lists, which
// then open, query and close every object; the IDs alone are what drift detection needs, so the
// agent calls them itself.
var (
	computeNetwork             = windows.NewLazySystemDLL("computenetwork.dll")
	procEnumerateEndpoints     = computeNetwork.NewProc("HcnEnumerateEndpoints")
	procEnumerateLoadBalancers = computeNetwork.NewProc("HcnEnumerateLoadBalancers")
)

func (windowsClient) ListEndpointIDs(ctx context.Context, networkID string) (IDList, error) {
	if err := ctx.Err(); err != nil {
		return IDList{}, err
	}
	var filter map[string]string
	if networkID != "" {
		// hcsshim's filter for the endpoints of a network (ListEndpointsOfNetwork).
		filter = map[string]string{"VirtualNetwork": networkID}
	}
	ids, err := enumerate(procEnumerateEndpoints, filter)
	if err != nil {
		return IDList{}, translateErr(OpListEndpointIDs, networkID, err, ErrEndpointNotFound)
	}
	return ids, nil
}

func (windowsClient) ListLoadBalancerIDs(ctx context.Context) (IDList, error) {
	if err := ctx.Err(); err != nil {
		return IDList{}, err
	}
	ids, err := enumerate(procEnumerateLoadBalancers, nil)
	if err != nil {
		return IDList{}, translateErr(OpListLoadBalancerIDs, "", err, ErrLoadBalancerNotFound)
	}
	return ids, nil
}

// enumerate calls one HcnEnumerate* function with hcsshim's default query (schema 2.0) and the
// filter, and returns its answer, a JSON array of GUIDs, as ParseIDList reads it.
func enumerate(proc *windows.LazyProc, filter map[string]string) (IDList, error) {
	q := hcn.HostComputeQuery{SchemaVersion: hcn.SchemaVersion{Major: 2, Minor: 0}, Flags: hcn.HostComputeQueryFlagsNone}
	if filter != nil {
		f, err := json.Marshal(filter)
		if err != nil {
			return IDList{}, err
		}
		q.Filter = string(f)
	}
	query, err := json.Marshal(q)
	if err != nil {
		return IDList{}, err
	}
	query16, err := windows.UTF16PtrFromString(string(query))
	if err != nil {
		return IDList{}, err
	}
	if err := proc.Find(); err != nil {
		return IDList{}, err
	}
	var answer, record *uint16
	hr, _, _ := proc.Call(uintptr(unsafe.Pointer(query16)), uintptr(unsafe.Pointer(&answer)), uintptr(unsafe.Pointer(&record)))
	text, errorRecord := takeString(answer), takeString(record)
	if int32(hr) < 0 {
		// The raw HRESULT, which translateErr normalises as hcsshim's wrappers would have.
		return IDList{}, fmt.Errorf("%s: %w: %s", proc.Name, syscall.Errno(hr), errorRecord)
	}
	list, err := ParseIDList(text)
	if err != nil {
		return IDList{}, fmt.Errorf("%s: %w", proc.Name, err)
	}
	return list, nil
}

// takeString copies a string HCN allocated and frees it.
func takeString(p *uint16) string {
	if p == nil {
		return ""
	}
	defer windows.CoTaskMemFree(unsafe.Pointer(p))
	return windows.UTF16PtrToString(p)
}
