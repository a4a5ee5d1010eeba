package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/cli/clitest"
	buildinfo "github.com/eni-operator/eni-operator/internal/version"
)

// badValues lists, for every flag of the command, values it must refuse;
// a flag without any names why in none.
var badValues = map[string][]string{
	"emulator-listen": {"", "localhost", ":99999", "127.0.0.1:"},
	"world":           {"/nonexistent/world.json", "/"},
	"nodeeni":         {"/nonexistent/nodeeni.yaml", "/"},
	"timeout":         {"0", "-1m", "later"},
	"once":            {"maybe"},
	"dir":             {"/dev/null"},
	"version":         {"maybe"},
}

// none lists the flags that take any value, and why.
var none = map[string]string{}

// Every flag's bad values are refused before anything starts, in one
// line naming the flag, the value and what is allowed. A flag added
// without bad values here fails the test.
func TestEveryFlagRefusesBadValues(t *testing.T) {
	var c cmdline
	clitest.EveryFlagHasBadValues(t, flags(&c), badValues, none)
	for name, values := range badValues {
		for _, v := range values {
			var out bytes.Buffer
			_, err := parse([]string{"--" + name + "=" + v}, &out)
			if err == nil || out.Len() != 0 || strings.Contains(err.Error(), "\n") {
				t.Errorf("--%s=%s: %v (output %q); want one line", name, v, err, out.String())
				continue
			}
			clitest.NamesFlagAndValue(t, name, v, err.Error())
		}
	}
}

func TestGoodValues(t *testing.T) {
	dir := t.TempDir()
	world := filepath.Join(dir, "world.json")
	if err := os.WriteFile(world, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parse([]string{"--emulator-listen=4566", "--world=" + world, "--dir=" + filepath.Join(dir, "new"), "--timeout=1m", "--once"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.o.EmulatorListen != ":4566" || c.o.WorldFile != world || !c.o.Once {
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
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=1", childEnv+"_ARGS="+tc.args)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || stdout.String() != tc.stdout {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", tc.args, code, stdout.String(), stderr.String())
		}
		if tc.code == 2 && (strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "--timeout=-1m0s")) {
			t.Errorf("%s: stderr %q", tc.args, stderr.String())
		}
		if tc.code == 0 && !strings.Contains(stdout.String(), runtime.Version()) {
			t.Errorf("%s: %q", tc.args, stdout.String())
		}
	}
}
