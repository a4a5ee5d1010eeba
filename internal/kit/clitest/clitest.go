// Package clitest holds the checks every command's flag tests share: each
// flag has values it refuses, and a refusal names the flag and the value.
package clitest

import (
	"flag"
	"strings"
	"testing"
)

// EveryFlagHasBadValues fails the test for each flag of fs with neither
// bad values in bad nor a reason in none, so a flag added without a
// refusal case fails its command's test.
func EveryFlagHasBadValues(t testing.TB, fs *flag.FlagSet, bad map[string][]string, none map[string]string) {
	t.Helper()
	fs.VisitAll(func(f *flag.Flag) {
		_, hasBad := bad[f.Name]
		_, anyValue := none[f.Name]
		if !hasBad && !anyValue {
			t.Errorf("flag --%s has no bad values in badValues (or a reason in none)", f.Name)
		}
	})
}

// NamesFlagAndValue fails the test unless the refusal msg of --name names
// the flag and value and says what is allowed ("--name=value: allowed").
func NamesFlagAndValue(t testing.TB, name, value, msg string) {
	t.Helper()
	if !strings.Contains(msg, "--"+name) || !strings.Contains(msg, value) || !strings.Contains(msg, ": ") {
		t.Errorf("--%s=%s: %q does not name the flag and the value", name, value, msg)
	}
}
