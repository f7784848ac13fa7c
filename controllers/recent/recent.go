// Package recent covers the lag of the controller's cache behind the controller's own writes:
// right after a rollout step writes hundreds of WindowsProxyNodes, or the config's status, the
// reconciles their events trigger may still read the old objects and would write them again (and
// repeat events). Writes remembers each written object with the resourceVersion it replaced, and
// stands in for the cached object only while the cache still holds exactly that version. It is an
// optimisation, never the source of truth: after a restart it is empty and the cache alone
// decides.
package recent

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TTL bounds how long a write stands in for the cache: long enough for any watch lag, short
// enough that a write the cache never shows (its object was deleted at once) is forgotten.
const TTL = 30 * time.Second

// Writes are the objects of one kind the controller wrote and the cache may not show yet. It is
// safe for concurrent use.
type Writes[T client.Object] struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	m     map[string]write[T]
}

type write[T client.Object] struct {
	// replaced is the resourceVersion before the write; empty for a create.
	replaced string
	obj      T
	at       time.Time
}

// NewWrites returns an empty record whose writes age on clk.
func NewWrites[T client.Object](clk clock.PassiveClock) *Writes[T] {
	return &Writes[T]{clock: clk, m: map[string]write[T]{}}
}

// Record remembers obj as written over the version replaced ("" for a create).
func (r *Writes[T]) Record(replaced string, obj T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[obj.GetName()] = write[T]{replaced: replaced, obj: obj, at: r.clock.Now()}
}

// Forget drops what was written to the object name (it was deleted).
func (r *Writes[T]) Forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, name)
}

// Freshen replaces, in byName (every object of the kind read from the cache), the objects the
// cache has not caught up on, and forgets the writes it caught up on or that are too old.
func (r *Writes[T]) Freshen(byName map[string]T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range r.m {
		cached, ok := byName[name]
		if w, stale := r.staleLocked(name, cached, ok); stale {
			byName[name] = w
		}
	}
}

// Fresh returns the object last written in place of cached, if the cache does not show that
// write yet.
func (r *Writes[T]) Fresh(cached T) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.staleLocked(cached.GetName(), cached, true)
}

func (r *Writes[T]) staleLocked(name string, cached T, found bool) (T, bool) {
	w, ok := r.m[name]
	switch {
	case !ok:
	case r.clock.Since(w.at) > TTL:
		delete(r.m, name)
	case found && cached.GetResourceVersion() == w.replaced, !found && w.replaced == "":
		return w.obj, true
	default:
		// The cache has our write, or moved past it (another write, a deletion).
		delete(r.m, name)
	}
	var zero T
	return zero, false
}
