package ownership

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// reserveSpace allocates f's blocks up to size without changing its length
// (fallocate with FALLOC_FL_KEEP_SIZE); the allocation stays with the file.
func reserveSpace(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return errors.ErrUnsupported
	}
	return err
}
