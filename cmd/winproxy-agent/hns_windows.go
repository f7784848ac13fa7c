package main

import (
	"fmt"

	"golang.org/x/sys/windows"

	"github.com/winproxy/winproxy/agent/hns"
)

// openWindowsHNS opens the host's HNS and reads the Windows build.
func openWindowsHNS() (hns.Client, string, error) {
	return hns.NewWindows(), fmt.Sprint(windows.RtlGetVersion().BuildNumber), nil
}
