package cli

import (
	"os"
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
