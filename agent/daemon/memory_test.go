package daemon

import (
	"runtime/metrics"
	"testing"
)

// TestMemoryReturnedAfterABigSync: a sync that allocated at least the live heap returns the memory,
// one that allocated less does not.
func TestMemoryReturnedAfterABigSync(t *testing.T) {
	cases := []struct {
		name string
		// allocated is what the sync allocates; live the live heap after it.
		allocated, live uint64
		returned        bool
	}{
		{"a start's first sync at 10k Services", 400 << 20, 105 << 20, true},
		{"a full resync", 130 << 20, 105 << 20, true},
		{"exactly the live heap", 105 << 20, 105 << 20, true},
		{"an event's sync", 40 << 10, 105 << 20, false},
		{"nothing", 0, 105 << 20, false},
		{"before the first collection", 2 << 20, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			total, freed := uint64(7<<30), 0
			m := &memoryReturner{read: func() (uint64, uint64) { return total, c.live }, free: func() { freed++ }}
			m.beforeSync()
			total += c.allocated
			if got := m.afterSync(); got != c.returned || freed != map[bool]int{true: 1}[c.returned] {
				t.Errorf("returned %v (%d frees), want %v", got, freed, c.returned)
			}
		})
	}
}

// TestReadHeapReadsTheRuntime: both metrics exist in this Go release (a name the runtime does not
// know reads as zero, which would return memory after every sync).
func TestReadHeapReadsTheRuntime(t *testing.T) {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	for _, v := range s {
		if v.Value.Kind() != metrics.KindUint64 {
			t.Errorf("runtime metric %s is not a counter here (%v)", v.Name, v.Value.Kind())
		}
	}
	sink = make([]byte, 1<<20)
	if allocated, _ := readHeap(); allocated < 1<<20 {
		t.Errorf("readHeap says %d bytes allocated since the start, after 1 MiB", allocated)
	}
}

var sink []byte
