package daemon

import (
	"runtime/metrics"
	"testing"
)

// TestMemoryReturnedAfterABigSync: a sync that allocated a collection cycle's worth (the live
// heap times GOGC) returns the memory, one that allocated less does not.
func TestMemoryReturnedAfterABigSync(t *testing.T) {
	const live = 105 << 20
	cases := []struct {
		name string
		// allocated is what the sync allocates; live the live heap after it; gcPercent GOGC.
		allocated, live, gcPercent uint64
		returned                   bool
	}{
		{"a start's first sync at 10k Services", 400 << 20, live, 25, true},
		{"the node's new source VIP: everything computed again", 60 << 20, live, 25, true},
		{"exactly a cycle's worth", live / 4, live, 25, true},
		{"the ID check's answer", 11 << 20, live, 25, false},
		{"an event's sync", 40 << 10, live, 25, false},
		{"nothing", 0, live, 25, false},
		{"Go's default target: a cycle is the live heap", 60 << 20, live, 100, false},
		{"the collector off (GOGC=off reads as -1 made unsigned)", 400 << 20, live, 1<<64 - 1, false},
		{"before the first collection", 2 << 20, 0, 25, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, freed := heapFigures{allocated: 7 << 30, live: c.live, gcPercent: c.gcPercent}, 0
			m := &memoryReturner{read: func() heapFigures { return h }, free: func() { freed++ }}
			m.beforeSync()
			h.allocated += c.allocated
			if got := m.afterSync(); got != c.returned || freed != map[bool]int{true: 1}[c.returned] {
				t.Errorf("returned %v (%d frees), want %v", got, freed, c.returned)
			}
		})
	}
}

// TestReadHeapReadsTheRuntime: every metric exists in this Go release (a name the runtime does not
// know reads as nothing, which would return memory after every sync or never), and reading them,
// twice a sync, allocates nothing once the samples exist.
func TestReadHeapReadsTheRuntime(t *testing.T) {
	var m memoryReturner
	sink = make([]byte, 1<<20)
	if h := m.readHeap(); h.allocated < 1<<20 || h.gcPercent == 0 {
		t.Errorf("readHeap says %d bytes allocated since the start (after 1 MiB) and GOGC %d", h.allocated, h.gcPercent)
	}
	for _, v := range m.samples {
		if v.Value.Kind() != metrics.KindUint64 {
			t.Errorf("runtime metric %s reads %v here, not a number", v.Name, v.Value.Kind())
		}
	}
	if n := testing.AllocsPerRun(10, func() { m.readHeap() }); n != 0 {
		t.Errorf("a read allocates %v times, want none", n)
	}
}

var sink []byte
