// Package sim is an in-memory HNS with the semantics winproxy relies on
// (docs/design/dataplane.md#the-hns-objects): generated GUIDs, not-found and port-exists errors,
// E_NOTIMPL on modify where the HNS version lacks it, HNS-not-running mode,
// the duplicate-IP quirk of WS2019/2022, per-call counters, latency and
// fault injection, and optional persistence to a file shared by processes.
//
// It runs on Linux (tests, the demo) and builds everywhere.
package sim

import (
	"context"
	crand "crypto/rand"
	"fmt"
	mrand "math/rand"
	"sync"
	"time"

	"github.com/winproxy/winproxy/agent/hns"
)

// Sim is a simulated HNS host implementing hns.Client. It is safe for
// concurrent use.
type Sim struct {
	mu      sync.Mutex
	h       *host
	store   *store // nil: in memory only
	detIDs  bool
	latency map[Op]time.Duration
	defLat  time.Duration
	sleep   func(context.Context, time.Duration) error
	counts  Counts
	faults  faults
	// weatherRng draws the failures of the host's Weather, seeded on first use.
	weatherRng  *mrand.Rand
	weatherSeed int64
}

var _ hns.Client = (*Sim)(nil)

// Option configures New.
type Option func(*Sim)

// WithProfile selects the simulated Windows release (default WS2022). With
// a state file that already exists, the file's profile wins: it describes
// the host, which a restarted agent does not get to choose.
func WithProfile(p Profile) Option { return func(s *Sim) { s.h.profile = p } }

// WithDeterministicIDs makes generated IDs a readable sequence
// (00000000-0000-0000-0000-000000000001, ...) instead of random GUIDs. The
// sequence is part of the host state, so it stays unique across processes
// sharing a state file.
func WithDeterministicIDs() Option { return func(s *Sim) { s.detIDs = true } }

// WithLatency delays every call by d (HNS calls cost milliseconds on
// Windows); the wait honours context cancellation.
func WithLatency(d time.Duration) Option { return func(s *Sim) { s.defLat = d } }

// WithOpLatency delays calls of one operation by d, overriding WithLatency.
func WithOpLatency(op Op, d time.Duration) Option { return func(s *Sim) { s.latency[op] = d } }

// WithStateFile persists the host to path (JSON). Every call takes a file
// lock, reloads the state if another process changed it, and saves after a
// successful write, so agents in several processes, or an agent killed and
// restarted, see one host.
func WithStateFile(path string) Option {
	return func(s *Sim) { s.store = &store{path: path} }
}

// WithState starts the host from st instead of an empty one, e.g. from a
// host's saved HNS dump, to see what a sync would do to it (winproxy-agent
// plan --hns). Without a state file only: a file's content describes the
// host.
func WithState(st State) Option { return func(s *Sim) { s.h = hostFromState(st) } }

// New builds a simulator. It fails only when the state file cannot be used.
func New(opts ...Option) (*Sim, error) {
	s := &Sim{h: newHost(WS2022), latency: map[Op]time.Duration{}, sleep: sleepCtx}
	for _, o := range opts {
		o(s)
	}
	if s.store == nil {
		return s, nil
	}
	st, err := openStore(s.store.path)
	if err != nil {
		return nil, err
	}
	s.store = st
	if err := st.acquire(); err != nil {
		_ = st.close()
		return nil, err
	}
	defer st.release()
	loaded, ok, err := st.load()
	if err != nil {
		_ = st.close()
		return nil, err
	}
	if ok {
		s.h = hostFromState(loaded)
		return s, nil
	}
	if err := st.save(s.h.state()); err != nil {
		_ = st.close()
		return nil, err
	}
	return s, nil
}

// MustNew is New for tests and examples without a state file.
func MustNew(opts ...Option) *Sim {
	s, err := New(opts...)
	if err != nil {
		panic(err)
	}
	return s
}

// Close releases the state file's lock handle.
func (s *Sim) Close() error {
	if s.store == nil {
		return nil
	}
	return s.store.close()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// sync runs f against the current host state under both the process mutex
// and (with persistence) the file lock, reloading first and saving after if
// f reports a change. Caller holds s.mu.
func (s *Sim) sync(f func(h *host) (changed bool, err error)) error {
	if s.store == nil {
		_, err := f(s.h)
		return err
	}
	if err := s.store.acquire(); err != nil {
		return err
	}
	defer s.store.release()
	if ch, err := s.store.changed(); err != nil {
		return err
	} else if ch {
		st, ok, err := s.store.load()
		if err != nil {
			return err
		}
		if ok {
			s.h = hostFromState(st)
		}
	}
	changed, err := f(s.h)
	if changed {
		if serr := s.store.save(s.h.state()); serr != nil {
			return serr
		}
	}
	return err
}

// call is the common path of every Client method: count, wait, inject
// faults, check that HNS runs, then run f. While the host is hung
// (SetHNSHung) the call blocks whatever its context says, as an HCN RPC does.
func (s *Sim) call(ctx context.Context, op Op, id string, f func(h *host) error) error {
	s.mu.Lock()
	s.counts.add(op)
	d, ok := s.latency[op]
	if !ok {
		d = s.defLat
	}
	s.mu.Unlock()

	if d > 0 {
		if err := s.sleep(ctx, d); err != nil {
			s.mu.Lock()
			s.counts.fail(op)
			s.mu.Unlock()
			return err
		}
	}

	slept := false
	for {
		s.mu.Lock()
		hung := false
		var delay time.Duration
		err := ctx.Err()
		if err == nil {
			err = s.sync(func(h *host) (bool, error) {
				if h.hung {
					hung = true
					return false, nil
				}
				if h.weather.Latency > 0 && !slept {
					delay = h.weather.Latency
					return false, nil
				}
				if ferr := s.faults.check(op); ferr != nil {
					return false, injected(op, id, ferr)
				}
				if s.stormy(h.weather) {
					return false, injected(op, id, nil)
				}
				if h.stopped {
					return false, hns.NewError(op, id, hns.CodeHNSNotRunning, nil)
				}
				ferr := f(h)
				return op.IsWrite() && ferr == nil, ferr
			})
		}
		if hung {
			s.mu.Unlock()
			time.Sleep(hungPoll)
			continue
		}
		if delay > 0 {
			s.mu.Unlock()
			slept = true
			if err := s.sleep(ctx, delay); err != nil {
				s.mu.Lock()
				s.counts.fail(op)
				s.mu.Unlock()
				return err
			}
			continue
		}
		if err != nil {
			s.counts.fail(op)
		}
		s.mu.Unlock()
		return err
	}
}

// stormy draws whether the host's Weather fails this call. Caller holds s.mu.
func (s *Sim) stormy(w Weather) bool {
	if w.FailureRate <= 0 {
		return false
	}
	if s.weatherRng == nil || s.weatherSeed != w.Seed {
		s.weatherRng, s.weatherSeed = mrand.New(mrand.NewSource(w.Seed)), w.Seed
	}
	return s.weatherRng.Float64() < w.FailureRate
}

// hungPoll is how often a call blocked by a hung HNS looks whether HNS came back.
const hungPoll = 50 * time.Millisecond

// newID returns a GUID-like ID in the upper case HNS uses for the object
// about to be added (the add* helpers take the next sequence number; the
// sequence lives in the host so it is shared through the state file).
func (s *Sim) newID(h *host) string {
	if s.detIDs {
		return fmt.Sprintf("00000000-0000-0000-0000-%012X", h.seq+1)
	}
	var b [16]byte
	if _, err := crand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; stay unique anyway.
		return fmt.Sprintf("FFFFFFFF-0000-0000-0000-%012X", h.seq+1)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%08X-%04X-%04X-%04X-%012X", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// --- counters, latency, faults ---

// Counts returns a snapshot of the call counters.
func (s *Sim) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts.clone()
}

// Reset zeroes the call counters (not the host).
func (s *Sim) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts = Counts{}
}

// SetLatency changes the default per-call latency.
func (s *Sim) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.defLat = d
}

// FailNth makes the n-th call from now (1 = the next one, any operation)
// fail with err (nil: ErrInjected). Sentinels of package hns come back with
// their HNS code, e.g. hns.ErrPortExists as 0x803b0013.
func (s *Sim) FailNth(n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.nth == nil {
		s.faults.nth = map[int]error{}
	}
	s.faults.nth[s.faults.calls+n] = orInjected(err)
}

// FailOp makes the next times calls of op fail with err; times < 0 means
// until ClearFaults.
func (s *Sim) FailOp(op Op, err error, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.ops == nil {
		s.faults.ops = map[Op]*opFault{}
	}
	s.faults.ops[op] = &opFault{err: orInjected(err), times: times}
}

// SetFailureRate makes each call fail with probability rate, drawn from a
// generator seeded with seed so runs are reproducible.
func (s *Sim) SetFailureRate(rate float64, seed int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.rate = rate
	s.faults.rateErr = orInjected(err)
	s.faults.rng = mrand.New(mrand.NewSource(seed))
}

func orInjected(err error) error {
	if err == nil {
		return ErrInjected
	}
	return err
}

// ClearFaults removes every injected fault.
func (s *Sim) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = faults{calls: s.faults.calls}
}
