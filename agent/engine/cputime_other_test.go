//go:build !unix

package engine_test

import "time"

// processCPU is not measured where getrusage does not exist; the benchmarks
// then report no cpu-ns/op.
func processCPU() time.Duration { return 0 }
