// Package cli holds what the commands share to check their command line
// before anything starts: parsing that reports a bad flag in one line,
// and checks of the value formats the flags take (listen addresses, AWS
// IDs, cluster names, Kubernetes names). A refused command line names the
// flag, the value and what is allowed; the commands exit with status 2.
package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/eni-operator/eni-operator/internal/bounded"
)

// Problems collects what is wrong with a command line.
type Problems struct{ list []string }

// Add records that --flag=value is not allowed, and what is.
func (p *Problems) Add(flagName string, value any, allowed string) {
	p.list = append(p.list, Invalid(flagName, value, allowed).Error())
}

// Check records the problem unless ok.
func (p *Problems) Check(ok bool, flagName string, value any, allowed string) {
	if !ok {
		p.Add(flagName, value, allowed)
	}
}

// AddErr records an error that already says what is wrong.
func (p *Problems) AddErr(err error) {
	if err != nil {
		p.list = append(p.list, bounded.Errors(err)...)
	}
}

// Err is nil when nothing was recorded, else one error on one line.
func (p *Problems) Err() error {
	if len(p.list) == 0 {
		return nil
	}
	return errors.New(strings.Join(p.list, "; "))
}

// Invalid is the error of a refused flag value: "invalid --flag=value:
// allowed".
func Invalid(flagName string, value any, allowed string) error {
	return fmt.Errorf("invalid --%s=%s: %s", flagName, Show(value), allowed)
}

// Show formats a flag value the way it would be typed.
func Show(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case float64:
		s = strconv.FormatFloat(x, 'g', -1, 64)
	case []string:
		s = strings.Join(x, ",")
	default:
		s = fmt.Sprint(v)
	}
	if s == "" || strings.ContainsAny(s, " \t\n\"'") {
		return strconv.Quote(s)
	}
	return s
}

// Parse parses args with fs. --help prints fs.Usage to out and returns
// flag.ErrHelp; every other problem (unknown flag, a value the flag's type
// refuses, positional arguments) comes back as one line naming the flag,
// the value and what the flag takes, and nothing is printed.
func Parse(fs *flag.FlagSet, args []string, out io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		fs.Usage()
		return err
	}
	if err != nil {
		return parseError(fs, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: every setting is a --flag (see --help)", fs.Args())
	}
	return nil
}

// PrintDefaults prints fs's flags as flag.PrintDefaults does, but each
// with the two dashes the docs, the chart and the errors use.
func PrintDefaults(fs *flag.FlagSet) {
	out := fs.Output()
	var b bytes.Buffer
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(out)
	_, _ = out.Write(flagLine.ReplaceAll(b.Bytes(), []byte("  --")))
}

var flagLine = regexp.MustCompile(`(?m)^  -`)

var flagErr = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-([^:]+): (.*)$`)

func parseError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("unknown flag --%s (see --help for the flags)", name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("--%s needs a value", name)
	}
	m := flagErr.FindStringSubmatch(msg)
	if m == nil {
		return err
	}
	value, name, detail := m[1], m[2], m[3]
	f := fs.Lookup(name)
	if f == nil {
		return err
	}
	allowed := typeHint(f)
	if detail != "parse error" && detail != "" && !strings.HasPrefix(detail, "strconv.") {
		if allowed == "" {
			allowed = detail
		} else {
			allowed = detail + "; allowed: " + allowed
		}
	} else if allowed != "" {
		allowed = "allowed: " + allowed
	}
	return Invalid(name, value, allowed)
}

// typeHint says what a flag's type takes, from its value's type or, for
// controller-runtime's --zap-* flags, their documented values.
func typeHint(f *flag.Flag) string {
	switch f.Name {
	case "zap-log-level":
		return "debug, info, error, panic or an integer > 0 (higher is more verbose)"
	case "zap-stacktrace-level":
		return "info, error or panic"
	case "zap-encoder":
		return "json or console"
	case "zap-time-encoding":
		return "epoch, millis, nanos, iso8601, rfc3339 or rfc3339nano"
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			return "true or false"
		}
		return ""
	}
	switch g.Get().(type) {
	case bool:
		return "true or false"
	case time.Duration:
		return "a duration such as 500ms, 30s, 5m or 1h"
	case int, int64:
		return "an integer"
	case uint, uint64:
		return "an integer >= 0"
	case float64:
		return "a number"
	}
	return ""
}

// ListenAddr checks a listen address: host:port with a port of 0-65535
// (an empty host listens on every interface). A bare port such as 8090 is
// accepted, as k8s-eni-tagger did, and returned as :8090. With allowOff,
// "0" is returned as is (the endpoint is off). It returns the address to
// use, or what is allowed.
func ListenAddr(s string, allowOff bool) (string, bool) {
	if allowOff && s == "0" {
		return s, true
	}
	if isPort(s) {
		return ":" + s, true
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || !isPort(port) || strings.ContainsAny(host, " /") {
		return s, false
	}
	return s, true
}

// ListenAddrAllowed is what ListenAddr accepts, for messages.
func ListenAddrAllowed(allowOff bool) string {
	s := "host:port or :port (port 0-65535; a bare port such as 8090 means :8090)"
	if allowOff {
		s += ", or 0 to turn the endpoint off"
	}
	return s
}

func isPort(s string) bool {
	if s == "" || len(s) > 5 {
		return false
	}
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && n <= 65535 && strconv.Itoa(n) == s
}

// AWSID reports whether s is an AWS resource ID of the given prefix
// ("vpc", "subnet"): the prefix, a dash, and 8 or 17 lowercase hex digits.
func AWSID(prefix, s string) bool {
	rest, ok := strings.CutPrefix(s, prefix+"-")
	if !ok || (len(rest) != 8 && len(rest) != 17) {
		return false
	}
	for _, c := range rest {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// AWSIDAllowed is what AWSID accepts, for messages.
func AWSIDAllowed(prefix string) string {
	name := prefix
	if prefix == "vpc" {
		name = "VPC"
	}
	return fmt.Sprintf("a %s ID: %s- and 8 or 17 lowercase hex digits, e.g. %s-0123456789abcdef0", name, prefix, prefix)
}

// Placeholder reports whether a value is an example left unedited:
// CHANGE-ME, <cluster-name>, CLUSTER and the like.
func Placeholder(s string) bool {
	if strings.ContainsAny(s, "<>") {
		return true
	}
	switch strings.ToLower(strings.NewReplacer("_", "-", " ", "-").Replace(s)) {
	case "change-me", "changeme", "replace-me", "cluster", "cluster-name", "your-cluster", "your-cluster-name",
		"placeholder", "todo", "tbd", "xxx":
		return true
	}
	return false
}

var clusterName = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$`)

// ClusterName checks a cluster name: 1-100 characters of letters, digits,
// - and _ starting with a letter or a digit (EKS's rule, which also keeps
// it within an EC2 tag value's 256), and no placeholder. It returns what
// is wrong, or "".
func ClusterName(s string) string {
	switch {
	case Placeholder(s):
		return "a placeholder, not a cluster name: set --cluster-name (or CLUSTER_NAME) to the cluster's real name, the one every ENI of the NodeENI controller is tagged and scoped with"
	case !clusterName.MatchString(s):
		return "1-100 characters of letters, digits, - and _, starting with a letter or a digit (EKS cluster names); empty turns the NodeENI controller off"
	}
	return ""
}

// DNSLabel reports whether s is a valid Kubernetes namespace name.
func DNSLabel(s string) bool { return len(validation.IsDNS1123Label(s)) == 0 }

// DNSSubdomain reports whether s is a valid Kubernetes object (e.g. node) name.
func DNSSubdomain(s string) bool { return len(validation.IsDNS1123Subdomain(s)) == 0 }

// QualifiedName reports whether s is a valid annotation key.
func QualifiedName(s string) bool { return len(validation.IsQualifiedName(s)) == 0 }

// Finite reports whether f is a number (neither NaN nor infinite).
func Finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
