package daemon

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
)

// memoryReturner hands what a sync freed back to the system at once when the sync allocated at
// least a collection cycle's worth: the live heap times the collector's target (GOGC), 25 % by the
// agent's default. Such a sync builds much anew (a start's first, the whole-node computation after
// a change of the node, a full resync): at 10k Services a start's first allocates about 400 MB and
// the next one, which sees the node's new source VIP endpoint and computes everything again, tens
// of MB, against a live heap of about 105 MiB. The collector frees it, but Go hands freed memory
// back to the system only over minutes (its background scavenger), and until then it counts in
// the agent's RSS: about 50 MiB after a start at 10k Services (docs/performance.md, "The agent
// binary, end to end"). An event's sync allocates kilobytes and returns nothing. A return is a
// forced collection, at most one more than the sync's own allocating caused.
type memoryReturner struct {
	// read gives the bytes allocated since the start, the live heap and GOGC; free returns the
	// memory. nil means the runtime's figures and debug.FreeOSMemory; tests set their own.
	read func() heapFigures
	free func()
	// before is read when a sync starts.
	before uint64
	// samples are the runtime's figures readHeap reads, kept between reads: a new list at each
	// read was two allocations of every sync.
	samples []metrics.Sample
}

// heapFigures are what memoryReturner reads of the runtime.
type heapFigures struct {
	// allocated is the bytes allocated since the start; live the live heap at the last
	// collection (zero before the first); gcPercent the collector's target (GOGC).
	allocated, live, gcPercent uint64
}

// beforeSync notes where a sync starts.
func (m *memoryReturner) beforeSync() { m.before = m.readHeap().allocated }

// afterSync returns the memory if the sync allocated a collection cycle's worth; it reports
// whether it did.
func (m *memoryReturner) afterSync() bool {
	h := m.readHeap()
	switch {
	case h.gcPercent > math.MaxInt32:
		// GOGC=off reads as -1 made unsigned: whoever turned the collector off gets no forced one.
		return false
	case h.live == 0:
		// No collection yet: the heap is still under the collector's first goal.
		return false
	case h.allocated-m.before < h.live*h.gcPercent/100:
		return false
	}
	if m.free == nil {
		debug.FreeOSMemory()
	} else {
		m.free()
	}
	return true
}

func (m *memoryReturner) readHeap() heapFigures {
	if m.read != nil {
		return m.read()
	}
	if m.samples == nil {
		m.samples = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/live:bytes"}, {Name: "/gc/gogc:percent"}}
	}
	metrics.Read(m.samples)
	return heapFigures{allocated: m.samples[0].Value.Uint64(), live: m.samples[1].Value.Uint64(), gcPercent: m.samples[2].Value.Uint64()}
}
