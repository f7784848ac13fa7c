//go:build unix

package engine_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time of the whole process (user and system, every
// thread, the garbage collector's included): on a shared machine it varies
// far less than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
