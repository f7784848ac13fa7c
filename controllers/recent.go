package controllers

import (
	"sync"
	"time"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
)

// recentWriteTTL bounds how long a write stands in for the cache: long enough for any watch lag,
// short enough that a write the cache never shows (its object was deleted at once) is
// forgotten.
const recentWriteTTL = 30 * time.Second

// recentWrites covers the lag of the cache behind the controller's own writes: right after a
// rollout step writes hundreds of WindowsProxyNodes, the reconciles their events trigger may
// still read the old objects and would write them again. It remembers each written object with
// the resourceVersion it replaced, and stands in for the cached object only while the cache
// still holds exactly that version. It is an optimisation, never the source of truth: after a
// restart it is empty and the cache alone decides.
type recentWrites struct {
	mu sync.Mutex
	m  map[string]recentWrite
}

type recentWrite struct {
	// replaced is the resourceVersion before the write; empty for a create.
	replaced string
	obj      *winproxyv1alpha1.WindowsProxyNode
	at       time.Time
}

func (r *recentWrites) record(replaced string, obj *winproxyv1alpha1.WindowsProxyNode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]recentWrite{}
	}
	r.m[obj.Name] = recentWrite{replaced: replaced, obj: obj, at: time.Now()}
}

func (r *recentWrites) forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, name)
}

// freshen replaces, in byName (every WindowsProxyNode read from the cache), the objects the cache
// has not caught up on, and forgets the writes it caught up on or that are too old.
func (r *recentWrites) freshen(byName map[string]*winproxyv1alpha1.WindowsProxyNode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, w := range r.m {
		cached, ok := byName[name]
		switch {
		case time.Since(w.at) > recentWriteTTL:
			delete(r.m, name)
		case ok && cached.ResourceVersion == w.replaced, !ok && w.replaced == "":
			byName[name] = w.obj
		default:
			// The cache has our write, or moved past it (another write, a deletion).
			delete(r.m, name)
		}
	}
}
