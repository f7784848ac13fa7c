//go:build !unix

package benchmeter

import "time"

// Process is not measured where getrusage does not exist; benchmarks then report no cpu-ns/op.
func Process() time.Duration { return 0 }
