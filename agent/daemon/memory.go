package daemon

import (
	"runtime/debug"
	"runtime/metrics"
)

// memoryReturner hands what a sync freed back to the system at once when the sync allocated more
// than the agent holds live. Such a sync builds everything anew (a start's first, a full resync,
// one after a failed write): at 10k Services a start's allocates about 400 MB and a full resync
// 130 MB, against a live heap of about 105 MiB. The collector frees it, but Go hands freed memory
// back to the system only over minutes (its background scavenger), and until then it counts in
// the agent's RSS: 60 MiB more than its steady state after a start at 10k Services
// (docs/performance.md, "The agent binary, end to end"). A sync that programmed a change
// allocates far less than the live heap and returns nothing; the cost of a return, a forced
// collection, follows the live heap, so it is never more than the sync's own allocating cost.
type memoryReturner struct {
	// read gives the bytes allocated since the start and the live heap, free returns the memory:
	// nil means readHeap and debug.FreeOSMemory; tests set their own.
	read func() (allocated, live uint64)
	free func()
	// before is read when a sync starts.
	before uint64
}

// beforeSync notes where a sync starts.
func (m *memoryReturner) beforeSync() { m.before, _ = m.readHeap() }

// afterSync returns the memory if the sync allocated at least the live heap; it reports whether it
// did.
func (m *memoryReturner) afterSync() bool {
	allocated, live := m.readHeap()
	// No collection yet (live reads zero): the heap is still under the collector's first goal.
	if live == 0 || allocated-m.before < live {
		return false
	}
	if m.free == nil {
		debug.FreeOSMemory()
	} else {
		m.free()
	}
	return true
}

func (m *memoryReturner) readHeap() (allocated, live uint64) {
	if m.read == nil {
		return readHeap()
	}
	return m.read()
}

// readHeap reads the bytes allocated since the start and the live heap at the last collection.
func readHeap() (allocated, live uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}
