package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/clitest"
	buildinfo "github.com/eni-operator/eni-operator/internal/version"
)

// badValues lists, for every flag of the command, values it must refuse;
// a flag without any names why in none.
var badValues = map[string][]string{
	"emulator-listen":   {"", "localhost", ":99999", "127.0.0.1:"},
	"world":             {"/nonexistent/world.json", "/"},
	"nodeeni":           {"/nonexistent/nodeeni.yaml", "/"},
	"timeout":           {"0", "-1m", "later"},
	"once":              {"maybe"},
	"dir":               {"/dev/null"},
	"operator-as-admin": {"maybe"},
	"version":           {"maybe"},
}

// none lists the flags that take any value, and why.
var none = map[string]string{}

// Every flag's bad values are refused before anything starts, in one
// line naming the flag, the value and what is allowed. A flag added
// without bad values here fails the test.
func TestEveryFlagRefusesBadValues(t *testing.T) {
	var c cmdline
	clitest.EveryFlagHasBadValues(t, flags(&c), badValues, none)
	clitest.RefusesInOneLine(t, badValues, func(args []string, out io.Writer) error { _, err := parse(args, out); return err })
}

func TestGoodValues(t *testing.T) {
	dir := t.TempDir()
	world := filepath.Join(dir, "world.json")
	if err := os.WriteFile(world, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parse([]string{"--emulator-listen=4566", "--world=" + world, "--dir=" + filepath.Join(dir, "new"), "--timeout=1m", "--once", "--operator-as-admin"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.o.EmulatorListen != ":4566" || c.o.WorldFile != world || !c.o.Once || !c.o.OperatorAsAdmin {
		t.Fatalf("%+v", c)
	}
}

// The real command: a refused flag exits 2 with one line before anything
// starts; --version prints the build as eni-operator does.
func TestExitStatusAndVersion(t *testing.T) {
	for _, tc := range []struct {
		args   string
		code   int
		stdout string
	}{
		{"--timeout=-1m", 2, ""},
		{"--version", 0, buildinfo.String("eni-sandbox", "dev") + "\n"},
	} {
		r := sandboxCommand.Run(t, tc.args, nil)
		if r.Code != tc.code || r.Stdout != tc.stdout {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", tc.args, r.Code, r.Stdout, r.Stderr)
		}
		if tc.code == 2 && (strings.Count(r.Stderr, "\n") != 1 || !strings.Contains(r.Stderr, "--timeout=-1m0s")) {
			t.Errorf("%s: stderr %q", tc.args, r.Stderr)
		}
		if tc.code == 0 && !strings.Contains(r.Stdout, runtime.Version()) {
			t.Errorf("%s: %q", tc.args, r.Stdout)
		}
	}
}
