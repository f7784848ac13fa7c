package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// store persists a host to a JSON file so several processes (or a restarted
// one) share one simulated host. Writers hold an exclusive lock on a
// sibling ".lock" file for the whole call, replace the state atomically
// (temp file + rename) and readers reload only when the file changed.
type store struct {
	path string
	lock *os.File
	seen os.FileInfo // state file as last loaded or written
}

func openStore(path string) (*store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	lf, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	return &store{path: path, lock: lf}, nil
}

func (s *store) close() error { return s.lock.Close() }

// acquire takes the cross-process lock.
func (s *store) acquire() error {
	if err := lockFile(s.lock); err != nil {
		return fmt.Errorf("sim: lock %s: %w", s.lock.Name(), err)
	}
	return nil
}

func (s *store) release() { _ = unlockFile(s.lock) }

// changed reports whether the state file differs from what this process
// last saw. Every save is a rename of a new file, so a different file
// identity means another writer; size and mtime guard against reuse.
func (s *store) changed() (bool, error) {
	fi, err := os.Stat(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sim: %w", err)
	}
	if s.seen == nil {
		return true, nil
	}
	return !os.SameFile(fi, s.seen) || fi.Size() != s.seen.Size() || !fi.ModTime().Equal(s.seen.ModTime()), nil
}

// load reads the state file; ok is false when there is none yet.
func (s *store) load() (st State, ok bool, err error) {
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, fmt.Errorf("sim: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return State{}, false, fmt.Errorf("sim: state file %s: %w", s.path, err)
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		return State{}, false, fmt.Errorf("sim: %w", err)
	}
	s.seen = fi
	return st, true, nil
}

func (s *store) save(st State) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), filepath.Base(s.path)+".tmp*")
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("sim: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("sim: %w", err)
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	s.seen = fi
	return nil
}
