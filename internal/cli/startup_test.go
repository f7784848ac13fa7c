package cli

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestDefaultGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tests := []struct {
		name string
		// env is GOGC in the environment; unset when empty.
		env string
		// running is the target before DefaultGCPercent(25), as the runtime read GOGC at start.
		running int
		want    int64
	}{
		{name: "GOGC unset: the program's default", running: 100, want: 25},
		{name: "GOGC set: the environment wins", env: "80", running: 80, want: 80},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.env)
			if tc.env == "" {
				if err := os.Unsetenv("GOGC"); err != nil {
					t.Fatal(err)
				}
			}
			debug.SetGCPercent(tc.running)
			DefaultGCPercent(25)
			if got := gcPercent(); got != tc.want {
				t.Errorf("gcPercent() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestDefaultMaxProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	tests := []struct {
		name string
		// env is GOMAXPROCS in the environment; unset when empty.
		env string
		// running is the setting before DefaultMaxProcs(1), as the runtime read GOMAXPROCS at start.
		running int
		want    int
	}{
		{name: "GOMAXPROCS unset: the program's default", running: 4, want: 1},
		{name: "GOMAXPROCS set: the environment wins", env: "3", running: 3, want: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMAXPROCS", tc.env)
			if tc.env == "" {
				if err := os.Unsetenv("GOMAXPROCS"); err != nil {
					t.Fatal(err)
				}
			}
			runtime.GOMAXPROCS(tc.running)
			DefaultMaxProcs(1)
			if got := runtime.GOMAXPROCS(0); got != tc.want {
				t.Errorf("GOMAXPROCS = %d, want %d", got, tc.want)
			}
		})
	}
}
