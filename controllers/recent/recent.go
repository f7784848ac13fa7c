// Package recent covers the lag of the controller's cache behind the controller's own writes:
// right after a rollout step writes hundreds of WindowsProxyNodes, or the config's status, the
// reconciles their events trigger may still read the old objects and would write them again (and
// repeat events). Writes remembers each written object and stands in for the cached object until
// the cache shows that write or a later version. It is an optimisation, never the source of truth:
// after a restart it is empty and the cache alone decides.
//
// Resource versions are compared as Kubernetes defines it since v1.35 for the objects of one
// resource (KEP-5504, comparable resource versions: a later write has a larger one), so that a
// cache showing a version between the one a write replaced and the write's own (an agent's
// report the watch delivered first) is known to be behind. A time limit would not do: on a loaded
// apiserver a 5,000-node rollout's watch events can arrive more than a minute after the writes,
// and every write the memory forgot while the cache still showed an older version was made again.
package recent

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TTL bounds how long a write stands in for a cache that does not hold its object at all (a
// create the watch has not delivered, or whose object was deleted at once, which the cache may
// never show), and for a cache whose versions cannot be compared with the write's.
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
	// obj is the object as the write returned it, with the resourceVersion it produced.
	obj T
	at  time.Time
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
	if ok {
		if behind(w, cached, found, r.clock.Since(w.at) <= TTL) {
			return w.obj, true
		}
		// The cache has our write or a later version, the object was deleted, or the cache's
		// versions cannot tell and TTL passed.
		delete(r.m, name)
	}
	var zero T
	return zero, false
}

// behind reports whether the cache (cached, when found) has not caught up with write w yet.
// young is true while w is within TTL.
func behind[T client.Object](w write[T], cached T, found, young bool) bool {
	if !found {
		return w.replaced == "" && young
	}
	if cached.GetUID() != w.obj.GetUID() && cached.GetUID() != "" && w.obj.GetUID() != "" {
		return false // deleted and created again by someone else
	}
	c, err := resourceversion.CompareResourceVersion(cached.GetResourceVersion(), w.obj.GetResourceVersion())
	if err != nil {
		return cached.GetResourceVersion() == w.replaced && young
	}
	return c < 0
}
