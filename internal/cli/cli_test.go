package cli

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func TestListenAddr(t *testing.T) {
	for in, want := range map[string]string{"8090": ":8090", ":8090": ":8090", "127.0.0.1:0": "127.0.0.1:0", "[::1]:80": "[::1]:80", "0": "0"} {
		if got, ok := ListenAddr(in, true); !ok || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, ok, want)
		}
	}
	if got, ok := ListenAddr("0", false); !ok || got != ":0" {
		t.Errorf("0 without off: %q %v", got, ok)
	}
	for _, in := range []string{"", "localhost", ":", "1.2.3.4:", ":65536", "99999", "-1", "a b:80", "host:port", "08090x"} {
		if _, ok := ListenAddr(in, true); ok {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestAWSID(t *testing.T) {
	for _, s := range []string{"vpc-01234567", "vpc-0123456789abcdef0"} {
		if !AWSID("vpc", s) {
			t.Errorf("%s refused", s)
		}
	}
	for _, s := range []string{"vpc-1", "banana", "vpc-0123456789ABCDEF0", "subnet-01234567", "vpc-012345678", "vpc-0123456789abcdef", "vpc-"} {
		if AWSID("vpc", s) {
			t.Errorf("%s accepted", s)
		}
	}
}

func TestClusterName(t *testing.T) {
	for _, s := range []string{"prod", "prod-eu_1", "0cluster", strings.Repeat("a", 100)} {
		if why := ClusterName(s); why != "" {
			t.Errorf("%s: %s", s, why)
		}
	}
	for _, s := range []string{"CHANGE-ME", "change-me", "<cluster-name>", "CLUSTER", "my<cluster>", "-prod", "_x", "prod.eu", "a b", strings.Repeat("a", 101)} {
		if ClusterName(s) == "" {
			t.Errorf("%s accepted", s)
		}
	}
	if !strings.Contains(ClusterName("CHANGE-ME"), "--cluster-name") {
		t.Error("the placeholder message does not say to set --cluster-name")
	}
}

func TestParse(t *testing.T) {
	newFS := func() (*flag.FlagSet, *time.Duration) {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		d := fs.Duration("interval", time.Second, "")
		fs.Bool("on", false, "")
		fs.Int("n", 1, "")
		return fs, d
	}
	for args, want := range map[string]string{
		"--interval=soon": "invalid --interval=soon: allowed: a duration",
		"--on=maybe":      "invalid --on=maybe: allowed: true or false",
		"--n=1.5":         "invalid --n=1.5: allowed: an integer",
		"--nope":          "unknown flag --nope",
		"--n":             "--n needs a value",
		"extra":           "unexpected arguments",
	} {
		fs, _ := newFS()
		var out bytes.Buffer
		err := Parse(fs, []string{args}, &out)
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") || out.Len() != 0 {
			t.Errorf("%s: %v (output %q), want %q", args, err, out.String(), want)
		}
	}
	fs, _ := newFS()
	fs.Usage = func() { _, _ = fs.Output().Write([]byte("usage\n")) }
	var out bytes.Buffer
	if err := Parse(fs, []string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) || out.String() != "usage\n" {
		t.Errorf("--help: %v %q", err, out.String())
	}
	var p Problems
	p.Check(false, "a", "", "x")
	p.Add("b", 1.5, "y")
	p.AddErr(errors.New("c\nd"))
	if got := p.Err().Error(); got != `invalid --a="": x; invalid --b=1.5: y; c; d` {
		t.Errorf("%q", got)
	}
}

func TestPrintDefaultsOfRenamedFlags(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("new-name", "a", "the name")
	var l Legacy
	l.Renamed(fs, "old-name", "new-name", "the original")
	var out bytes.Buffer
	fs.SetOutput(&out)
	PrintDefaults(fs)
	if got := out.String(); strings.Contains(got, "panic") || !strings.Contains(got, "  --old-name") {
		t.Errorf("--help of a renamed flag:\n%s", got)
	}
}

func TestPrintDefaultsWithTwoDashes(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("name", "a", "a name, as in -x")
	fs.Bool("on", false, "on")
	var out bytes.Buffer
	fs.SetOutput(&out)
	PrintDefaults(fs)
	want := "  --name string\n    \ta name, as in -x (default \"a\")\n  --on\n    \ton\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

func TestWarningsAreLoggedAsWarnings(t *testing.T) {
	var out bytes.Buffer
	_, warn := NewLogger(&zap.Options{DestWriter: &out})
	warn("compat", "--old is deprecated")
	if got := out.String(); !strings.Contains(got, `"level":"warn"`) || !strings.Contains(got, `"logger":"compat"`) || !strings.Contains(got, "--old is deprecated") {
		t.Errorf("logged %q", got)
	}
}
