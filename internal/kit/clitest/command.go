package clitest

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/version"
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
// the arguments Run gave), else run the tests.
func (c Command) Main(m *testing.M, main func()) {
	c.RunIfChild(main)
	os.Exit(m.Run())
}

// RunIfChild runs as the command, and exits, when started by Run; for a
// TestMain that does more than run the tests.
func (c Command) RunIfChild(main func()) {
	if os.Getenv(c.Env) != "1" {
		return
	}
	os.Args = append([]string{c.Name}, strings.Fields(os.Getenv(c.Env+"_ARGS"))...)
	main()
	os.Exit(0)
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

// RunMainRefuses checks each bad value of each flag with the command's
// runMain (given fixed, the arguments every run needs): exit status 2,
// nothing on stdout, one line on stderr starting with the command's name
// and naming the flag and the value (its text before the first comma).
func RunMainRefuses(t *testing.T, name string, bad map[string][]string, fixed []string, runMain func(args []string, stdout, stderr io.Writer) int) {
	t.Helper()
	for flagName, values := range bad {
		for _, v := range values {
			var stdout, stderr bytes.Buffer
			code := runMain(append(slices.Clone(fixed), "--"+flagName+"="+v), &stdout, &stderr)
			msg := stderr.String()
			if code != 2 || stdout.Len() != 0 || strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, name+": ") {
				t.Errorf("--%s=%s: exit %d, stdout %q, stderr %q; want 2 and one line", flagName, v, code, stdout.String(), msg)
				continue
			}
			shown, _, _ := strings.Cut(v, ",")
			NamesFlagAndValue(t, flagName, shown, msg)
		}
	}
}

// PrintsVersion checks that --version alone (nothing else the command
// needs) exits 0 and prints the build, as every command does: name, the
// version (dev in a test), the VCS revision when there is one, the Go
// version.
func PrintsVersion(t *testing.T, name string, runMain func(args []string, stdout, stderr io.Writer) int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"--version"}, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if v := stdout.String(); v != version.String(name, "dev")+"\n" || !strings.HasPrefix(v, name+" dev ") ||
		!strings.Contains(v, runtime.Version()) {
		t.Fatalf("version %q", v)
	}
}

// NoKubeconfig runs the command where it finds no kubeconfig (HOME empty,
// plus each of extras in turn) and checks it stops with exit 1 and one
// line that says where it looked, without a Go stack or client-go's
// internals.
func (c Command) NoKubeconfig(t *testing.T, args string, extras ...string) {
	t.Helper()
	home := t.TempDir()
	for _, extra := range append([]string{""}, extras...) {
		env := []string{"HOME=" + home}
		if extra != "" {
			env = append(env, strings.ReplaceAll(extra, "$HOME", home))
		}
		r := c.Run(t, args, env)
		if r.Code != 1 || strings.Count(r.Stderr, "\n") != 1 || r.Stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 1 and one line", extra, r.Code, r.Stdout, r.Stderr)
			continue
		}
		for _, want := range []string{"--kubeconfig", "KUBECONFIG", "ServiceAccount"} {
			if !strings.Contains(r.Stderr, want) {
				t.Errorf("%q: %q does not mention %s", extra, r.Stderr, want)
			}
		}
		if strings.Contains(r.Stderr, "KUBERNETES_MASTER") || strings.Contains(r.Stderr, "goroutine") || strings.Contains(r.Stderr, ".go:") {
			t.Errorf("%q: %q", extra, r.Stderr)
		}
	}
}

// NoCluster empties the test's environment of every way to find a
// cluster (HOME's kubeconfig, KUBECONFIG, the in-cluster service), so a
// command that wrongly accepts its input stops with "no kubeconfig"
// instead of starting against a real cluster. It returns the empty HOME.
func NoCluster(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	return home
}
