package ownership

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// disk is the side of the ledger that writes the journal: the file, the
// space reserved ahead of its end, and what memory holds that the file
// lacks. Every method runs under the ledger's lock.
type disk struct {
	// fault, when set, is asked before every write (WithWriteFault).
	fault func() error
	// size is the journal's length; reserved how far its blocks are
	// allocated ahead (reserveSpace). noReserve: the file system cannot.
	size, reserved int64
	noReserve      bool
	// unsaved counts the changes memory holds and the journal lacks since
	// writeErr. Nothing is appended until a compaction wrote the whole
	// state again, so a torn write never runs into the next line.
	unsaved  int
	writeErr error
	// spaceErr is why the last reservation or compaction failed: the disk
	// is full, though every change so far is written.
	spaceErr error
}

// lineBytes bounds the length of one journal line (a load balancer with two
// fingerprints takes 106 bytes).
const lineBytes = 128

// reserveAhead is how many bytes the journal keeps allocated beyond its
// end: the lines it may take until its next compaction (twice the live set,
// or the floor), and as many again for a live set that grows meanwhile.
func reserveAhead(live int) int64 {
	return int64(max(compactFactor*live, minCompactLines)+minCompactLines) * lineBytes
}

// LedgerStatus is how far the journal on disk keeps up with the ledger.
type LedgerStatus struct {
	// Path is the journal's; empty for an in-memory ledger.
	Path string
	// Unsaved counts the changes held in memory only, since a write failed
	// with WriteErr. HNS is programmed all the same; a restart before they
	// are written recognises only the load balancers that match what it
	// wants then (docs/reliability.md#the-hardening-run-issue-22).
	Unsaved  int
	WriteErr error
	// SpaceErr is why the journal could not reserve space ahead (or be
	// compacted): the disk is full, though every change so far is written.
	SpaceErr error
}

// Status reports whether the journal holds everything the ledger knows.
func (l *Ledger) Status() LedgerStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return LedgerStatus{Path: l.path, Unsaved: l.unsaved, WriteErr: l.writeErr, SpaceErr: l.spaceErr}
}

// Flush writes what memory holds and the journal lacks: the lines held for
// the next append, or, after a write failed, the journal whole. It also
// retries a reservation that failed. It is how the ledger catches up once
// the disk has room again; the applier calls it at the end of every sync.
// The error is the write's, which Status reports too.
func (l *Ledger) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.path == "" || l.closed {
		return nil
	}
	if l.unsaved > 0 {
		if err := l.compact(); err != nil {
			l.writeErr = err
			return err
		}
		return nil
	}
	if l.heldN > 0 {
		if l.writeHeld(l.held, l.heldN); l.unsaved > 0 {
			return l.writeErr
		}
	}
	if l.spaceErr != nil {
		if l.lines > max(compactFactor*l.live(), minCompactLines) {
			_ = l.compact() // it reserves, or says why not
		} else if l.open() == nil {
			l.reserve()
		}
	}
	return nil
}

// persist writes n changes, rendered as b, to the journal. A failed write
// is no error of the change: the ledger holds it in memory and says so.
func (l *Ledger) persist(b []byte, n int) {
	if l.unsaved > 0 {
		l.unsaved += n
		return
	}
	if err := l.append(b); err != nil {
		l.fellBehind(err, n)
		return
	}
	l.lines += n
	if l.lines > max(compactFactor*l.live(), minCompactLines, l.retryAt) {
		// The append is done: a failed compaction loses nothing, and is
		// retried once the journal has doubled again.
		if l.compact() != nil {
			l.retryAt = compactFactor * l.lines
		}
		return
	}
	if !l.noReserve && l.reserved-l.size < reserveAhead(l.live())/2 {
		l.reserve()
	}
}

// fellBehind records that a write of n changes failed: from now on the
// ledger holds them in memory until a compaction writes them.
func (l *Ledger) fellBehind(err error, n int) {
	l.unsaved += n
	l.writeErr = err
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}

func (l *Ledger) faulted() error {
	if l.fault == nil {
		return nil
	}
	return l.fault()
}

// open opens the journal for appending, and reserves its space ahead.
func (l *Ledger) open() error {
	if l.f != nil {
		return nil
	}
	if err := l.faulted(); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("ledger: %w", err)
	}
	l.f, l.size, l.reserved = f, fi.Size(), fi.Size()
	l.reserve()
	return nil
}

// append writes b at the end of the journal.
func (l *Ledger) append(b []byte) error {
	if err := l.open(); err != nil {
		return err
	}
	if err := l.faulted(); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	n, err := l.f.Write(b)
	l.size += int64(n)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}

// reserve allocates the journal's blocks up to reserveAhead past its end,
// without changing its length, so that the appends until the next
// compaction need no new block: a disk that fills up meanwhile does not
// stop them.
func (l *Ledger) reserve() {
	if l.noReserve || l.f == nil {
		return
	}
	want := l.size + reserveAhead(l.live())
	err := l.faulted()
	if err == nil {
		err = reserveSpace(l.f, want)
	}
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		l.noReserve = true
	case err != nil:
		l.spaceErr = fmt.Errorf("ledger: reserving %d KiB ahead: %w", (want-l.size)>>10, err)
	default:
		l.reserved, l.spaceErr = want, nil
	}
}

// compact rewrites the journal as one line per live entry, and reserves
// space ahead of the new file. The file is closed around the rename, which
// Windows refuses on an open file. Once it is done the journal holds
// everything the ledger knows.
func (l *Ledger) compact() error {
	err := l.writeSnapshot()
	if err != nil {
		l.spaceErr = err
		return err
	}
	l.lines, l.retryAt = l.live(), 0
	l.unsaved, l.writeErr, l.spaceErr = 0, nil, nil
	l.held, l.heldN = l.held[:0], 0 // the snapshot holds their changes
	if err := l.open(); err != nil {
		// Written, but not open for the next append: that append retries.
		l.spaceErr = err
	}
	return nil
}

// writeSnapshot replaces the journal with the live entries, through a
// temporary file and a rename, so that a kill leaves one or the other.
func (l *Ledger) writeSnapshot() error {
	if err := l.faulted(); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(l.path), filepath.Base(l.path)+".tmp*")
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	_, werr := tmp.Write(l.snapshot())
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("ledger: %w", err)
	}
	if l.f != nil {
		_ = l.f.Close() // every write went through it already
		l.f = nil
	}
	if err := os.Rename(tmp.Name(), l.path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}
