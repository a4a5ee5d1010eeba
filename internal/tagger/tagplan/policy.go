package tagplan

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/tagkeys"
)

// AWS's limits on EC2 tags, checked before any call so a bad annotation
// costs nothing and gets a precise message.
const (
	MaxTagsPerResource = 50
	MaxKeyLength       = 127
	MaxValueLength     = 256
)

// NamespacingPodNamespace is the --tag-namespace value that prefixes every
// key with the pod's namespace (k8s-eni-tagger's "enable").
const NamespacingPodNamespace = "enable"

// Policy is the operator's rule set for which tags pods may ask for.
// Anyone who can annotate a pod can tag an ENI that IAM conditions or
// billing may trust, so the operator's admin decides what is allowed.
type Policy struct {
	// Allow, when not empty, lists the key patterns pods may use
	// ('*' matches any run of characters). Matched against the key as
	// written in the annotation.
	Allow []string
	// Deny lists key patterns pods may not use; it wins over Allow.
	Deny []string
	// Namespacing prefixes every key: "" leaves keys alone,
	// NamespacingPodNamespace uses the pod's namespace, anything else is
	// a fixed prefix. The prefix and the key are joined by ':'.
	Namespacing string
}

// Validate checks the policy's own settings.
func (p Policy) Validate() error {
	for _, pat := range append(append([]string{}, p.Allow...), p.Deny...) {
		if strings.TrimSpace(pat) == "" {
			return errors.New("tag key patterns must not be empty")
		}
	}
	if n := p.Namespacing; n != "" && n != NamespacingPodNamespace {
		if strings.Contains(n, ":") {
			return fmt.Errorf("--tag-namespace %q must not contain ':' (it is the separator)", n)
		}
		if reserved(n + ":") {
			return fmt.Errorf("--tag-namespace %q starts with a reserved prefix", n)
		}
		if len(n) > 100 {
			return fmt.Errorf("--tag-namespace %q is longer than 100 characters", n)
		}
	}
	return nil
}

// Desired turns the tags a pod asked for into the tags its ENI should
// carry, or says every reason it cannot (errors.Join of one error per
// problem, each quoting keys with bounded.Quoted; the condition lists a
// few of them, see problemsMessage).
func (p Policy) Desired(podNamespace string, asked map[string]string) (map[string]string, error) {
	prefix := ""
	switch p.Namespacing {
	case "":
	case NamespacingPodNamespace:
		prefix = podNamespace + ":"
	default:
		prefix = p.Namespacing + ":"
	}
	keys := make([]string, 0, len(asked))
	for k := range asked {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var problems []error
	out := make(map[string]string, len(asked))
	for _, k := range keys {
		v := asked[k]
		full := prefix + k
		// ParseAnnotation applies the character rule already; this
		// holds it for any other caller of Desired.
		charsErr := tagkeys.CheckTag(k, v)
		switch {
		case charsErr != nil:
			problems = append(problems, fmt.Errorf("tag %s: %w", bounded.Quoted(k), charsErr))
		case reserved(k) || reserved(full):
			problems = append(problems, reservedProblem(k, full))
		case !p.allowed(k):
			problems = append(problems, fmt.Errorf("tag %s: key not allowed by the operator's tag policy", bounded.Quoted(k)))
		case utf8.RuneCountInString(full) > MaxKeyLength:
			problems = append(problems, fmt.Errorf("tag %s: key is %d characters, the limit is %d", bounded.Quoted(k), utf8.RuneCountInString(full), MaxKeyLength))
		case utf8.RuneCountInString(v) > MaxValueLength:
			problems = append(problems, fmt.Errorf("tag %s: value is %d characters, the limit is %d", bounded.Quoted(k), utf8.RuneCountInString(v), MaxValueLength))
		}
		out[full] = v
	}
	// One tag of the 50 is the operator's ownership token. Reported
	// first: with many tags it is the problem that matters, and the list
	// in the condition is cut after a few.
	if len(asked) > MaxTagsPerResource-1 {
		problems = append([]error{fmt.Errorf("%d tags asked for; an ENI holds at most %d, one of which is %s", len(asked), MaxTagsPerResource, HashTag)}, problems...)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return out, nil
}

func (p Policy) allowed(key string) bool {
	for _, pat := range p.Deny {
		if globMatch(pat, key) {
			return false
		}
	}
	if len(p.Allow) == 0 {
		return true
	}
	for _, pat := range p.Allow {
		if globMatch(pat, key) {
			return true
		}
	}
	return false
}

// reserved reports whether a key is on the product's reserved list
// (internal/tagkeys): the operator's own ownership keys and those AWS and
// other components act on. A pod that could set them could make the
// NodeENI controller, the VPC CNI or EKS detach, delete or ignore an ENI.
func reserved(key string) bool { return tagkeys.IsReserved(key) }

func reservedProblem(key, full string) error {
	r, ok := tagkeys.ReservedBy(key)
	if !ok {
		r, _ = tagkeys.ReservedBy(full)
	}
	return fmt.Errorf("tag %s: keys starting with %s are reserved (%s acts on them)", bounded.Quoted(key), r.Prefix, r.Owner)
}

// globMatch reports whether s matches pattern, where '*' matches any run
// of characters (including '/') and everything else matches itself.
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return strings.HasSuffix(s, last)
}
