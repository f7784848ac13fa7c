//go:build !unix && !windows

package sim

import "os"

// No cross-process lock on other platforms; the in-process mutex still holds.
func lockFile(*os.File) error   { return nil }
func unlockFile(*os.File) error { return nil }
