package fleet

import "errors"

// errNoFreeze: Windows has no signal that stops a process without ending it.
var errNoFreeze = errors.New("freezing a process needs SIGSTOP, which Windows does not have")

// Freeze is not available on Windows.
func (p *Process) Freeze() error { return errNoFreeze }

// Thaw is not available on Windows.
func (p *Process) Thaw() error { return errNoFreeze }
