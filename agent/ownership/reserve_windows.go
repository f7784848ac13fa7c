package ownership

import (
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// reserveSpace sets f's allocation size (FileAllocationInfo), which
// allocates its clusters up to size without changing its length. NTFS
// gives the clusters past the end back when the last handle closes: the
// agent keeps the journal open for as long as it runs, and reserves again
// whenever it opens it.
func reserveSpace(f *os.File, size int64) error {
	info := struct{ AllocationSize int64 }{size}
	return windows.SetFileInformationByHandle(windows.Handle(f.Fd()), windows.FileAllocationInfo,
		(*byte)(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)))
}
