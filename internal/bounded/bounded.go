// Package bounded keeps what the operator writes about its inputs small:
// condition messages, event notes and log lines quote user input (tag
// keys, annotation fragments, node names), and an input near Kubernetes'
// 256 KiB annotation limit must not become a status etcd refuses, an
// event the API server rejects, or megabytes of log.
package bounded

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

const (
	// EventNote is the API server's limit on an event's note (1 KiB);
	// a longer one is refused and the event lost.
	EventNote = 1024
	// Message is the bound of a condition message the operator writes: a
	// person reads it in kubectl, and status objects stay small.
	Message = 1024
	// Quote is the bound of one piece of user input quoted in a message.
	Quote = 64
	// Items is how many problems or names a message lists before it says
	// how many more there are.
	Items = 5
)

const ellipsis = "…"

// Truncate returns s cut to at most n bytes on a rune boundary, with an
// ellipsis (counted in n) when anything was cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= len(ellipsis) {
		return ellipsis[:max(n, 0)]
	}
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// Quoted is %q of s, cut to Quote bytes of input first, with the full
// length said when it was cut: a 100 KB key is named, not reproduced.
func Quoted(s string) string {
	if len(s) <= Quote {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q (%d bytes)", Truncate(s, Quote), len(s))
}

// List joins at most limit items with sep and says how many more there
// are: "a; b; c; and 7 more".
func List(items []string, sep string, limit int) string {
	if limit < 1 {
		limit = 1
	}
	if len(items) <= limit {
		return strings.Join(items, sep)
	}
	return fmt.Sprintf("%s%sand %d more", strings.Join(items[:limit], sep), sep, len(items)-limit)
}

// ListWithin is List kept within n bytes as well: it lists at most limit
// items, fewer when they would not fit, and always says how many it left
// out. The first item is cut to fit rather than left out, so the result
// names at least one problem; it is at most n bytes whenever n leaves
// room for the "and N more" suffix.
func ListWithin(items []string, sep string, limit, n int) string {
	if limit < 1 {
		limit = 1
	}
	var b strings.Builder
	shown := 0
	for i, it := range items {
		if i == limit {
			break
		}
		suffix := ""
		if more := len(items) - i - 1; more > 0 {
			suffix = fmt.Sprintf("%sand %d more", sep, more)
		}
		add := it
		if i > 0 {
			add = sep + it
		}
		if b.Len()+len(add)+len(suffix) > n {
			if i > 0 {
				break
			}
			add = Truncate(it, n-len(suffix))
		}
		b.WriteString(add)
		shown++
		if len(add) < len(it) {
			break // cut: what follows would read as part of it
		}
	}
	if more := len(items) - shown; more > 0 {
		if shown > 0 {
			b.WriteString(sep)
		}
		fmt.Fprintf(&b, "and %d more", more)
	}
	return b.String()
}

// Errors flattens err (errors.Join nests) into one line per problem,
// newlines folded, for ListWithin.
func Errors(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, inner := range j.Unwrap() {
				if inner != nil {
					walk(inner)
				}
			}
			return
		}
		out = append(out, strings.ReplaceAll(e.Error(), "\n", "; "))
	}
	walk(err)
	return out
}

// Error wraps err so that its message is at most Message bytes; errors.Is
// and errors.As still see err. For errors that end in a log line, such as
// those a reconciler returns (controller-runtime logs them in full).
func Error(err error) error {
	if err == nil || len(err.Error()) <= Message {
		return err
	}
	return &boundedError{err}
}

type boundedError struct{ err error }

func (e *boundedError) Error() string { return Truncate(e.err.Error(), Message) }
func (e *boundedError) Unwrap() error { return e.err }
