// Package version formats what every command's --version prints: the
// version stamped at build time, the VCS revision the binary was built
// from (when it was built from a checkout) and the Go version.
package version

import (
	"runtime"
	"runtime/debug"
)

// String returns "<command> <version> (<revision>[, modified]) <go version>";
// the revision part is left out when the build has none.
func String(command, version string) string {
	s := command + " " + version
	if rev, modified := revision(); rev != "" {
		s += " (" + rev
		if modified {
			s += ", modified"
		}
		s += ")"
	}
	return s + " " + runtime.Version()
}

func revision() (rev string, modified bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", false
	}
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.modified":
			modified = kv.Value == "true"
		}
	}
	return rev, modified
}
