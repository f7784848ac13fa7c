package main

import (
	"flag"

	"github.com/spf13/pflag"
)

// addGoFlags lets libraries that register on a standard flag.FlagSet (zap's logging options) add
// their flags to a cobra command.
func addGoFlags(fs *pflag.FlagSet, bind func(*flag.FlagSet)) {
	gfs := flag.NewFlagSet("", flag.ContinueOnError)
	bind(gfs)
	fs.AddGoFlagSet(gfs)
}
