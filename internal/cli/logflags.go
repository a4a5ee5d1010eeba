package cli

import (
	"flag"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// BindLogFlags binds controller-runtime's logging flags (--zap-log-level,
// --zap-encoder, --zap-devel, --zap-stacktrace-level, --zap-time-encoding)
// to o on fs. They are bound on a scratch set and moved over, so they
// share the command's parsing, its one-line refusals and its --help.
func BindLogFlags(fs *flag.FlagSet, o *zap.Options) {
	scratch := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.BindFlags(scratch)
	scratch.VisitAll(func(f *flag.Flag) { fs.Var(f.Value, f.Name, f.Usage) })
}

// NewLogger builds the process's logger from the logging flags, and a
// function that logs a line at zap's warning level, which logr has no
// call for: a compatibility warning must not read as routine information.
func NewLogger(o *zap.Options) (logr.Logger, func(name, msg string)) {
	raw := zap.NewRaw(zap.UseFlagOptions(o))
	return zapr.NewLogger(raw), func(name, msg string) { raw.Named(name).Warn(msg) }
}
