package cli

import (
	"flag"
	"fmt"
	"slices"
	"strings"
)

// EnvVar names an environment variable that sets a flag the command line
// did not set.
type EnvVar struct{ Env, Flag string }

// PrefixedEnv returns the variables prefix+NAME for the given flags, NAME
// being the flag's name in upper case with '-' as '_' (viper's
// AutomaticEnv with a "-" to "_" replacer, as k8s-eni-tagger read them).
func PrefixedEnv(prefix string, flags ...string) []EnvVar {
	out := make([]EnvVar, 0, len(flags))
	for _, f := range flags {
		out = append(out, EnvVar{Env: prefix + strings.ToUpper(strings.ReplaceAll(f, "-", "_")), Flag: f})
	}
	return out
}

// aliasValue is implemented by the values of renamed flags, so a flag
// set through its old name counts as given on the command line.
type aliasValue interface{ aliasOf() string }

// ApplyEnv sets each flag of vars that the command line did not set (by
// its name or an old one) from its variable, when that variable is set
// and not empty: the command line wins over the environment, which wins
// over the default. When several variables name one flag the first set
// one wins. A value the flag refuses is reported naming the variable, the
// value and what the flag takes.
func ApplyEnv(fs *flag.FlagSet, vars []EnvVar, lookup func(string) (string, bool)) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		given[f.Name] = true
		if a, ok := f.Value.(aliasValue); ok {
			given[a.aliasOf()] = true
		}
	})
	var p Problems
	for _, v := range vars {
		val, ok := lookup(v.Env)
		if !ok || val == "" || given[v.Flag] {
			continue
		}
		f := fs.Lookup(v.Flag)
		if f == nil {
			return fmt.Errorf("environment variable %s names the unknown flag --%s", v.Env, v.Flag)
		}
		if err := fs.Set(v.Flag, val); err != nil {
			allowed := typeHint(f)
			if allowed == "" {
				allowed = err.Error()
			}
			p.AddErr(fmt.Errorf("invalid %s=%s (sets --%s): allowed: %s", v.Env, Show(val), v.Flag, allowed))
			continue
		}
		given[v.Flag] = true
	}
	return p.Err()
}

// Legacy registers the settings of the projects the operator replaces
// that have no flag of their own here: renamed flags, removed flags and
// environment variables with no effect. Each use is accepted, so a
// command line or manifest written for the original keeps starting, and
// leaves one warning naming what replaces it, for the command to log at
// start.
type Legacy struct {
	warnings []string
}

// Warnings returns the warnings of the settings used, in the order they
// were given, each once.
func (l *Legacy) Warnings() []string {
	out := []string{}
	for _, w := range l.warnings {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

func (l *Legacy) warn(format string, args ...any) {
	l.warnings = append(l.warnings, fmt.Sprintf(format, args...))
}

// Renamed registers --name as the old name of --target (which must be
// registered already): setting it sets --target, and warns.
func (l *Legacy) Renamed(fs *flag.FlagSet, name, target, origin string) {
	t := fs.Lookup(target)
	if t == nil {
		panic("cli: --" + name + " renames the unknown flag --" + target)
	}
	fs.Var(&renamed{Value: t.Value, l: l, name: name, target: target, origin: origin}, name,
		fmt.Sprintf("deprecated (%s's name): use --%s", origin, target))
}

type renamed struct {
	flag.Value
	l                    *Legacy
	name, target, origin string
}

func (r *renamed) aliasOf() string { return r.target }

// String is the target's value; the flag package also calls it on a zero
// renamed, to tell a default from none.
func (r *renamed) String() string {
	if r == nil || r.Value == nil {
		return ""
	}
	return r.Value.String()
}

func (r *renamed) Set(s string) error {
	if err := r.Value.Set(s); err != nil {
		return err
	}
	r.l.warn("--%s (%s) is deprecated: it sets --%s; use that name", r.name, r.origin, r.target)
	return nil
}

// IsBoolFlag lets an old boolean name be given without a value.
func (r *renamed) IsBoolFlag() bool {
	b, ok := r.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// Removed registers --name, a setting of origin with no effect here:
// any value check accepts (nil: any value) is taken and ignored, with a
// warning naming the replacement.
func (l *Legacy) Removed(fs *flag.FlagSet, name, origin, replacement string, check func(string) error) {
	fs.Var(&removed{l: l, name: name, origin: origin, replacement: replacement, check: check}, name,
		fmt.Sprintf("deprecated (%s), no effect: %s", origin, replacement))
}

type removed struct {
	l                         *Legacy
	name, origin, replacement string
	value                     string
	check                     func(string) error
}

func (r *removed) String() string {
	if r == nil {
		return ""
	}
	return r.value
}

func (r *removed) Set(s string) error {
	if r.check != nil {
		if err := r.check(s); err != nil {
			return err
		}
	}
	r.value = s
	r.l.warn("--%s=%s (%s) has no effect and is deprecated: %s", r.name, Show(s), r.origin, r.replacement)
	return nil
}

// IgnoredEnv is an environment variable an original read that has no
// effect here, and what replaces it.
type IgnoredEnv struct{ Env, Origin, Replacement string }

// CheckIgnoredEnv warns about each of vars that is set and not empty.
func (l *Legacy) CheckIgnoredEnv(vars []IgnoredEnv, lookup func(string) (string, bool)) {
	for _, v := range vars {
		if val, ok := lookup(v.Env); ok && val != "" {
			l.warn("%s=%s (%s) has no effect: %s", v.Env, Show(val), v.Origin, v.Replacement)
		}
	}
}
