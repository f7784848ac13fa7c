package cli

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"

	"github.com/winproxy/winproxy/internal/version"
)

// LogStartup logs what kube-proxy logs when it starts: the version, the Go runtime's settings
// and every flag with its value, so that a log shows which build ran with which settings.
func LogStartup(log logr.Logger, binary string, flags map[string]string) {
	info := version.Get()
	log.Info("Version info", "binary", binary, "version", info.Version, "commit", info.Commit, "goVersion", info.GoVersion, "platform", info.Platform)
	log.Info("Golang settings", "GOGC", os.Getenv("GOGC"), "gcPercent", gcPercent(), "GOMAXPROCS", strconv.Itoa(runtime.GOMAXPROCS(0)),
		"GOTRACEBACK", os.Getenv("GOTRACEBACK"), "memoryLimit", debug.SetMemoryLimit(-1))
	log.Info("Settings", "flags", flags)
}

// FlagValues is every flag of the flag sets with its value, set or default, as /flagz shows
// them; deprecated and hidden flags, and --help, are left out.
func FlagValues(sets ...*pflag.FlagSet) map[string]string {
	out := map[string]string{}
	for _, fs := range sets {
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Deprecated == "" && !f.Hidden && f.Name != "help" {
				out[f.Name] = f.Value.String()
			}
		})
	}
	return out
}

// DefaultGCPercent sets the garbage collector's target (Go's GOGC) to percent, unless the
// environment sets GOGC, which then wins as it does for any Go program.
func DefaultGCPercent(percent int) {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(percent)
	}
}

// DefaultMaxProcs sets how many threads run Go code at once (Go's GOMAXPROCS) to n, unless the
// environment sets GOMAXPROCS, which then wins as it does for any Go program.
func DefaultMaxProcs(n int) {
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		runtime.GOMAXPROCS(n)
	}
}

// gcPercent is the garbage collector's target in effect, whoever set it.
func gcPercent() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return -1
	}
	return int64(s[0].Value.Uint64())
}
