package ownership

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The journal's space is reserved ahead: on a small tmpfs that a filler file then fills to the
// last byte, hundreds of changes are still written to disk, not only held in memory. Where the
// test may not mount a file system (not root) it checks the reservation on the temp directory's
// file system by the blocks the journal holds.
func TestLedgerReservedSpaceOutlastsAFullDisk(t *testing.T) {
	dir := t.TempDir()
	mounted := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m") == nil
	if mounted {
		t.Cleanup(func() { _ = unix.Unmount(dir, 0) })
	} else {
		t.Log("cannot mount a tmpfs here: checking the reservation on the temp directory only")
	}
	path := filepath.Join(dir, "owned")
	l, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	proof := []string{strings.Repeat("A", fingerprintLen)}
	add := func(i int) {
		if err := l.change(entry{op: '+', kind: lineLoadBalancer, id: fmt.Sprintf("LB-%04d", i), proofs: proof}); err != nil {
			t.Fatal(err)
		}
	}
	add(0)
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if l.noReserve {
		t.Fatalf("the file system of %s cannot reserve space (fallocate unsupported)", dir)
	}
	if held, want := st.Blocks*512, reserveAhead(1); held < want || st.Size >= want {
		t.Fatalf("the journal holds %d bytes of blocks for %d bytes, want at least %d reserved", held, st.Size, want)
	}
	if !mounted {
		return
	}
	filler := fill(t, dir)
	const changes = 400
	for i := 1; i <= changes; i++ {
		add(i)
	}
	if s := l.Status(); s.Unsaved != 0 || s.WriteErr != nil {
		t.Fatalf("on a full disk the reserved journal fell behind: %+v", s)
	}
	back, err := ReadLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(back.IDs()); n != changes+1 {
		t.Errorf("the journal on the full disk holds %d entries, want %d", n, changes+1)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil || l.Status() != (LedgerStatus{Path: path}) {
		t.Errorf("once the disk has room: %v, %+v", err, l.Status())
	}
}

// fill writes a file into dir until the file system is full, and returns its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return path
		}
	}
}
