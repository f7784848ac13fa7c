package controllers

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/resolve"
)

// matchedSpecs remembers which WindowsProxyNode specs were found to match their hash, by name,
// UID and generation, so that a spec is hashed once per change instead of on every reconcile.
// A spec edited by hand has a new generation and is hashed again.
type matchedSpecs struct {
	mu sync.Mutex
	m  map[string]specVersion
}

type specVersion struct {
	uid        types.UID
	generation int64
}

// drifted reports whether w's spec no longer matches its hash: someone edited it by hand.
func (s *matchedSpecs) drifted(w *winproxyv1alpha1.WindowsProxyNode) bool {
	v := specVersion{uid: w.UID, generation: w.Generation}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[w.Name] == v {
		return false
	}
	if resolve.Hash(&w.Spec.Proxy) != w.Spec.Hash {
		return true
	}
	if s.m == nil {
		s.m = map[string]specVersion{}
	}
	s.m[w.Name] = v
	return false
}

// forget drops a deleted WindowsProxyNode.
func (s *matchedSpecs) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, name)
}
