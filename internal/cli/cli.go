// Package cli gives both winproxy binaries the command-line habits of Kubernetes components, so
// that an admin who ran kube-proxy finds the same flags: component-base logging (--v, --vmodule,
// --logging-format text|json), a version command, and the kubeconfig found as kubectl finds it.
package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/winproxy/winproxy/internal/version"

	// The json logging format, as kube-proxy registers it.
	_ "k8s.io/component-base/logs/json/register"
)

// Logging is the logging configuration set by flags.
type Logging struct {
	config *logsapi.LoggingConfiguration
}

// AddLoggingFlags registers component-base's logging flags on fs, and the zap flags earlier
// releases had, hidden and deprecated: they are accepted and ignored with a warning, so that
// existing manifests keep starting.
func AddLoggingFlags(fs *pflag.FlagSet) *Logging {
	// A process parses one command line, but tests run many commands in one process: the same
	// settings may be applied again, different ones are still refused.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	l := &Logging{config: logsapi.NewLoggingConfiguration()}
	logsapi.AddFlags(l.config, fs)
	var old zap.Options
	gfs := flag.NewFlagSet("", flag.ContinueOnError)
	old.BindFlags(gfs)
	gfs.VisitAll(func(f *flag.Flag) {
		fs.AddGoFlag(f)
		_ = fs.MarkDeprecated(f.Name, "use --v and --logging-format; it is ignored")
	})
	return l
}

// Apply validates the flags, sets up klog and makes controller-runtime log through it.
func (l *Logging) Apply() error {
	if err := logsapi.ValidateAndApply(l.config, nil); err != nil {
		return err
	}
	ctrl.SetLogger(klog.NewKlogr())
	return nil
}

// PrintVersion writes the build's version as text, or as JSON with output "json".
func PrintVersion(w io.Writer, binary, output string) error {
	info := version.Get()
	switch output {
	case "", "text":
		_, err := fmt.Fprintf(w, "%s %s\n", binary, info)
		return err
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	return fmt.Errorf("unknown output %q: want text or json", output)
}
