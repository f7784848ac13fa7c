//go:build unix

package benchmeter

import (
	"syscall"
	"time"
)

// Process is the CPU time of the whole process (user and system, every thread, the garbage
// collector's included).
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
