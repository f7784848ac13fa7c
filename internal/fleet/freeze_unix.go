//go:build !windows

package fleet

import "syscall"

// Freeze stops the process (SIGSTOP) without ending it, like a hung process or a paused VM.
func (p *Process) Freeze() error { return p.cmd.Process.Signal(syscall.SIGSTOP) }

// Thaw lets a frozen process go on (SIGCONT).
func (p *Process) Thaw() error { return p.cmd.Process.Signal(syscall.SIGCONT) }
