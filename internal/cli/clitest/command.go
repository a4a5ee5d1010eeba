package clitest

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Command makes a command's test binary act as the command itself, so a
// test runs the real thing — its exit status, its stdout and stderr —
// without a separate build. Env is the variable that switches the test
// binary into the command.
type Command struct {
	Name string // as os.Args[0] in the command
	Env  string // e.g. ENI_OPERATOR_TEST_CHILD
}

// Main is TestMain's body: run as the command when started by Run (with
// the arguments Run gave; before, when set, runs first), else run the
// tests.
func (c Command) Main(m *testing.M, main func(), before func()) {
	if os.Getenv(c.Env) == "1" {
		if before != nil {
			before()
		}
		os.Args = append([]string{c.Name}, strings.Fields(os.Getenv(c.Env+"_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Cmd is the command started with args (space-separated) and, when env is
// not nil, exactly that environment (else the test's own plus the switch).
func (c Command) Cmd(args string, env []string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env, c.Env+"=1", c.Env+"_ARGS="+args)
	return cmd
}

// Result is how a run of the command ended.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// Run runs the command to its end (see Cmd).
func (c Command) Run(t testing.TB, args string, env []string) Result {
	t.Helper()
	cmd := c.Cmd(args, env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return Result{Code: code, Stdout: stdout.String(), Stderr: stderr.String()}
}

// RefusesInOneLine checks each bad value of each flag with the command's
// parse: refused in one line, nothing written, the flag and the value
// named (the value as shown is its text before the first comma).
func RefusesInOneLine(t *testing.T, bad map[string][]string, parse func(args []string, out io.Writer) error) {
	t.Helper()
	for name, values := range bad {
		for _, v := range values {
			var out bytes.Buffer
			err := parse([]string{"--" + name + "=" + v}, &out)
			if err == nil || out.Len() != 0 || strings.Contains(err.Error(), "\n") {
				t.Errorf("--%s=%s: %v (output %q); want one line", name, v, err, out.String())
				continue
			}
			shown, _, _ := strings.Cut(v, ",")
			NamesFlagAndValue(t, name, shown, err.Error())
		}
	}
}
