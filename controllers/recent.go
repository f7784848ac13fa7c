package controllers

import (
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// recentWriteTTL bounds how long a write stands in for the cache: long enough for any watch lag,
// short enough that a write the cache never shows (its object was deleted at once) is
// forgotten.
const recentWriteTTL = 30 * time.Second

// recentWrites covers the lag of the cache behind the controller's own writes: right after a
// rollout step writes hundreds of WindowsProxyNodes, or the config's status, the reconciles
// their events trigger may still read the old objects and would write them again (and repeat
// events). It remembers each written object with the resourceVersion it replaced, and stands in
// for the cached object only while the cache still holds exactly that version. It is an
// optimisation, never the source of truth: after a restart it is empty and the cache alone
// decides.
type recentWrites[T client.Object] struct {
	mu sync.Mutex
	m  map[string]recentWrite[T]
}

type recentWrite[T client.Object] struct {
	// replaced is the resourceVersion before the write; empty for a create.
	replaced string
	obj      T
	at       time.Time
}

func (r *recentWrites[T]) record(replaced string, obj T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]recentWrite[T]{}
	}
	r.m[obj.GetName()] = recentWrite[T]{replaced: replaced, obj: obj, at: time.Now()}
}

func (r *recentWrites[T]) forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, name)
}

// freshen replaces, in byName (every object of the kind read from the cache), the objects the
// cache has not caught up on, and forgets the writes it caught up on or that are too old.
func (r *recentWrites[T]) freshen(byName map[string]T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range r.m {
		cached, ok := byName[name]
		if w, stale := r.staleLocked(name, cached, ok); stale {
			byName[name] = w
		}
	}
}

// fresh returns the object this controller last wrote in place of cached, if the cache does not
// show that write yet.
func (r *recentWrites[T]) fresh(cached T) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.staleLocked(cached.GetName(), cached, true)
}

func (r *recentWrites[T]) staleLocked(name string, cached T, found bool) (T, bool) {
	w, ok := r.m[name]
	switch {
	case !ok:
	case time.Since(w.at) > recentWriteTTL:
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
