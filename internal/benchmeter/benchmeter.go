// Package benchmeter measures what benchmarks report besides wall time: the process's CPU time,
// because the machines that run them are shared and wall time moves 1.5–4× with the other jobs
// while CPU time barely does; and the heap a structure keeps.
package benchmeter

import (
	"runtime"
	"testing"
	"time"
)

// LiveHeap is the heap in use after a collection: the difference of two is what was kept in
// between.
func LiveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// Meter measures a benchmark loop that times all it runs.
type Meter struct {
	b     *testing.B
	start time.Duration
}

// Start measures from now until Report.
func Start(b *testing.B) Meter { return Meter{b: b, start: Process()} }

// Report reports the CPU time since Start per op.
func (m Meter) Report() { Report(m.b, Process()-m.start) }

// Report reports d, the CPU time of b.N ops, per op (cpu-ns/op): for loops that prepare each op
// with the timer stopped and measure the timed part themselves, with Process.
func Report(b *testing.B, d time.Duration) {
	if d > 0 && b.N > 0 {
		b.ReportMetric(float64(d)/float64(b.N), "cpu-ns/op")
	}
}
