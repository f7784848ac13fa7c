//go:build !windows

package main

import (
	"errors"

	"github.com/winproxy/winproxy/agent/hns"
)

// openWindowsHNS fails off Windows: only the simulator runs here.
func openWindowsHNS() (hns.Client, string, error) {
	return nil, "", errors.New("--hns=windows needs Windows; use --hns=sim with --hns-sim-state on this platform")
}
