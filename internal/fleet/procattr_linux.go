package fleet

import "syscall"

// procAttr makes a child die with the test or demo that started it: a test binary killed on its
// timeout runs no cleanup, and an orphaned agent would keep its ports and HNS host busy for the
// next run.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
