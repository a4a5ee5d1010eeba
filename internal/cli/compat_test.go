package cli

import (
	"flag"
	"strings"
	"testing"
	"time"
)

func TestPrefixedEnv(t *testing.T) {
	got := PrefixedEnv("ENI_TAGGER_", "dry-run", "metrics-bind-address")
	if len(got) != 2 || got[0] != (EnvVar{"ENI_TAGGER_DRY_RUN", "dry-run"}) || got[1].Env != "ENI_TAGGER_METRICS_BIND_ADDRESS" {
		t.Fatalf("%v", got)
	}
}

// The command line wins over the environment, by the flag's name or an
// old one; empty variables count as unset; a bad value names the
// variable and what the flag takes.
func TestApplyEnvAndLegacy(t *testing.T) {
	newFS := func() (*flag.FlagSet, *Legacy, *int, *time.Duration, *bool) {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		n := fs.Int("n", 1, "")
		d := fs.Duration("interval", time.Second, "")
		b := fs.Bool("on", false, "")
		l := &Legacy{}
		l.Renamed(fs, "old-n", "n", "orig")
		l.Renamed(fs, "old-on", "on", "orig")
		l.Removed(fs, "gone", "orig", "use --n", nil)
		return fs, l, n, d, b
	}
	env := map[string]string{"X_N": "5", "X_INTERVAL": "", "X_ON": "true", "X_GONE": "3"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	vars := PrefixedEnv("X_", "n", "interval", "on", "gone")

	fs, l, n, d, b := newFS()
	if err := Parse(fs, []string{"--old-n=7", "--old-on"}, &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	if err := ApplyEnv(fs, vars, lookup); err != nil {
		t.Fatal(err)
	}
	if *n != 7 || *d != time.Second || !*b {
		t.Fatalf("n=%d interval=%v on=%v", *n, *d, *b)
	}
	w := strings.Join(l.Warnings(), "\n")
	for _, want := range []string{"--old-n (orig) is deprecated: it sets --n", "--old-on", "--gone=3 (orig) has no effect and is deprecated: use --n"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q lack %q", w, want)
		}
	}

	fs, _, n, _, _ = newFS()
	_ = Parse(fs, nil, &strings.Builder{})
	if err := ApplyEnv(fs, vars, lookup); err != nil || *n != 5 {
		t.Fatalf("%v n=%d", err, *n)
	}
	env["X_N"] = "five"
	fs, _, _, _, _ = newFS()
	if err := ApplyEnv(fs, vars, lookup); err == nil || err.Error() != "invalid X_N=five (sets --n): allowed: an integer" {
		t.Fatalf("%v", err)
	}
	l = &Legacy{}
	l.CheckIgnoredEnv([]IgnoredEnv{{Env: "X_ON", Origin: "orig", Replacement: "nothing"}, {Env: "X_INTERVAL", Origin: "orig"}}, lookup)
	if got := l.Warnings(); len(got) != 1 || got[0] != "X_ON=true (orig) has no effect: nothing" {
		t.Fatalf("%q", got)
	}
}
