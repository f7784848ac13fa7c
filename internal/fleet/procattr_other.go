//go:build !linux

package fleet

import "syscall"

// procAttr has nothing to add where the parent's death cannot be signalled to the child.
func procAttr() *syscall.SysProcAttr { return nil }
