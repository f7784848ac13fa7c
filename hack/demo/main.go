//go:build !windows

// Command demo is `make demo`: the whole of winproxy on this machine, a local control plane, the
// controller and simulated Windows nodes, for a first look and for exploring with kubectl.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/winproxy/winproxy/internal/demo"
)

func main() {
	var opts demo.Options
	flag.BoolVar(&opts.Once, "once", false, "show everything once and exit: 0 when the config became Ready, 1 otherwise")
	flag.StringVar(&opts.BinDir, "bin-dir", "", "directory holding winproxy-controller and winproxy-agent (default: build them)")
	flag.DurationVar(&opts.Timeout, "timeout", 2*time.Minute, "how long to wait for the config to become Ready")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := demo.Run(ctx, opts); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}
