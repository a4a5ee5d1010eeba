package cli

import (
	"flag"

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
