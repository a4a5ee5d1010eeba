package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/eni-operator/eni-operator/internal/version"
)

// BindVersion binds --version, which every command has.
func BindVersion(fs *flag.FlagSet, print *bool) {
	fs.BoolVar(print, "version", false, "print the version, VCS revision and Go version, and exit")
}

// Program names a command and its version, as --version and a refused
// command line show them.
type Program struct{ Name, Version string }

// Done is what every command does first with the outcome of parsing its
// command line (err) and its --version: after --help it is done (status
// 0); a refused command line is one line "<command>: <problem>" on stderr
// and status 2, before anything starts; --version prints the version and
// is done (status 0). done is false when the command goes on.
func Done(p Program, err error, printVersion bool, stdout, stderr io.Writer) (status int, done bool) {
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0, true
	case err != nil:
		fmt.Fprintln(stderr, p.Name+":", err)
		return 2, true
	case printVersion:
		fmt.Fprintln(stdout, version.String(p.Name, p.Version))
		return 0, true
	}
	return 0, false
}
