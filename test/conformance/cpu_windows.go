package conformance

import "syscall"

// cpuNanos is the user and kernel CPU time of this process, every thread.
func cpuNanos() int64 {
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0
	}
	var creation, exit, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(h, &creation, &exit, &kernel, &user); err != nil {
		return 0
	}
	return 100 * (ticks(kernel) + ticks(user))
}

// ticks is a FILETIME duration in its 100 ns units.
func ticks(f syscall.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
