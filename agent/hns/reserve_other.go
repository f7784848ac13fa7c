//go:build !linux && !windows

package hns

import (
	"errors"
	"os"
)

// reserveSpace is not available here: the journal grows block by block.
func reserveSpace(*os.File, int64) error { return errors.ErrUnsupported }
