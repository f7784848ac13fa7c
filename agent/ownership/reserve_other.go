//go:build !linux && !windows

package ownership

import (
	"errors"
	"os"
)

// reserveSpace is not available here: the journal grows block by block.
func reserveSpace(*os.File, int64) error { return errors.ErrUnsupported }
