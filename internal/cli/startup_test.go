package cli

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

// DefaultGCPercent and DefaultMaxProcs set the program's default unless the environment sets the
// runtime's variable, which then wins as it does for any Go program.
func TestDefaultsYieldToTheEnvironment(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, setting := range []struct {
		// env is the runtime's variable; def the program's default for it.
		env string
		def int
		// start sets the runtime as it read env at the start; apply sets the program's default;
		// read is the setting in effect.
		start func(int)
		apply func()
		read  func() int
	}{
		{"GOGC", 25, func(n int) { debug.SetGCPercent(n) }, func() { DefaultGCPercent(25) }, func() int { return int(gcPercent()) }},
		{"GOMAXPROCS", 1, func(n int) { runtime.GOMAXPROCS(n) }, func() { DefaultMaxProcs(1) }, func() int { return runtime.GOMAXPROCS(0) }},
	} {
		for _, tc := range []struct {
			name string
			// env is the variable's value; unset when empty.
			env string
			// running is the setting at the start.
			running, want int
		}{
			{name: "unset: the program's default", running: 3, want: setting.def},
			{name: "set: the environment wins", env: "3", running: 3, want: 3},
		} {
			t.Run(setting.env+" "+tc.name, func(t *testing.T) {
				t.Setenv(setting.env, tc.env)
				if tc.env == "" {
					if err := os.Unsetenv(setting.env); err != nil {
						t.Fatal(err)
					}
				}
				setting.start(tc.running)
				setting.apply()
				if got := setting.read(); got != tc.want {
					t.Errorf("%s in effect = %d, want %d", setting.env, got, tc.want)
				}
			})
		}
	}
}
