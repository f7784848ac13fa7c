//go:build !windows

package chaos

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if len(report.lines) > 0 {
		fmt.Println("chaos figures (docs/reliability.md):")
		for _, l := range report.lines {
			fmt.Println("  " + l)
		}
	}
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}
