//go:build ignore

// Command driver runs upstream winkernel on the clusters read from standard
// input; see driver.go. Written into the temporary module by ../build.go.
package main

import (
	"fmt"
	"os"

	"upstream/winkernel"
)

func main() {
	if err := winkernel.RunConformanceDriver(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "driver:", err)
		os.Exit(1)
	}
}
