// Package drift finds WindowsProxyNode specs edited by hand: a spec that no longer matches the
// hash the controller wrote with it. The controller writes such a node again, as it would a node
// whose config changed.
package drift

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/resolve"
)

// Checker remembers which WindowsProxyNode specs were found to match their hash, by name, UID and
// generation, so that a spec is hashed once per change instead of on every reconcile. A spec
// edited by hand has a new generation and is hashed again. The zero Checker is ready; it is safe
// for concurrent use.
type Checker struct {
	mu sync.Mutex
	m  map[string]version
}

type version struct {
	uid        types.UID
	generation int64
}

// Drifted reports whether w's spec no longer matches its hash: someone edited it by hand.
func (c *Checker) Drifted(w *winproxyv1alpha1.WindowsProxyNode) bool {
	v := version{uid: w.UID, generation: w.Generation}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[w.Name] == v {
		return false
	}
	if resolve.Hash(&w.Spec.Proxy) != w.Spec.Hash {
		return true
	}
	if c.m == nil {
		c.m = map[string]version{}
	}
	c.m[w.Name] = v
	return false
}

// Forget drops a deleted WindowsProxyNode.
func (c *Checker) Forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, name)
}
