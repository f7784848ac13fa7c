//go:build !race

package engine_test

// raceEnabled is true when the race detector is on; see race_test.go.
const raceEnabled = false
