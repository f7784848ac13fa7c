//go:build race

package engine_test

// raceEnabled is true when the race detector is on; see norace_test.go.
const raceEnabled = true
