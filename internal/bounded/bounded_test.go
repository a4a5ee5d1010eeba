package bounded

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789abc", 10, "0123456…"},
		{"ééééé", 7, "éé…"}, // never splits a rune
		{"abc", 2, "\xe2\x80"[:2]},
	}
	for _, tt := range tests {
		got := Truncate(tt.in, tt.n)
		if tt.n > len(ellipsis) && got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
		if len(got) > tt.n {
			t.Errorf("Truncate(%q, %d) is %d bytes", tt.in, tt.n, len(got))
		}
		if tt.n > len(ellipsis) && !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q is not valid UTF-8", tt.in, tt.n, got)
		}
	}
}

func TestQuoted(t *testing.T) {
	if got := Quoted("Team"); got != `"Team"` {
		t.Errorf("Quoted = %s", got)
	}
	huge := strings.Repeat("k", 100000)
	got := Quoted(huge)
	if len(got) > Quote+40 || !strings.Contains(got, "(100000 bytes)") {
		t.Errorf("Quoted(100 KB) = %s (%d bytes)", got, len(got))
	}
}

func TestList(t *testing.T) {
	items := []string{"a", "b", "c", "d"}
	if got := List(items, "; ", 5); got != "a; b; c; d" {
		t.Errorf("List = %q", got)
	}
	if got := List(items, "; ", 2); got != "a; b; and 2 more" {
		t.Errorf("List = %q", got)
	}
}

func TestListWithin(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name     string
		items    []string
		limit, n int
		want     string
	}{
		{"all fit", []string{"a", "b"}, 5, 100, "a; b"},
		{"count limit", []string{"a", "b", "c", "d"}, 2, 100, "a; b; and 2 more"},
		{"byte limit", []string{"aaaa", "bbbb", "cccc"}, 5, 20, "aaaa; and 2 more"},
		{"first item cut", []string{long, "b"}, 5, 30, Truncate(long, 30-len("; and 1 more")) + "; and 1 more"},
		{"single item cut", []string{long}, 5, 30, Truncate(long, 30)},
		{"none", nil, 5, 30, ""},
	}
	for _, tt := range tests {
		got := ListWithin(tt.items, "; ", tt.limit, tt.n)
		if got != tt.want {
			t.Errorf("%s: ListWithin = %q, want %q", tt.name, got, tt.want)
		}
		if len(got) > tt.n {
			t.Errorf("%s: %d bytes, bound %d", tt.name, len(got), tt.n)
		}
	}
	// Thousands of long items: at most Items listed, within the bound,
	// and the rest counted.
	many := make([]string, 5000)
	for i := range many {
		many[i] = fmt.Sprintf("tag %q: key is 200 characters", strings.Repeat("k", 200)+fmt.Sprint(i))
	}
	got := ListWithin(many, "; ", Items, Message)
	if len(got) > Message || !strings.HasSuffix(got, " more") || strings.Count(got, "tag ") > Items {
		t.Errorf("ListWithin(5000 items) = %d bytes: %.200q…", len(got), got)
	}
}

func TestErrorsFlattensJoined(t *testing.T) {
	err := errors.Join(errors.New("a"), errors.Join(errors.New("b\nc"), nil, errors.New("d")))
	got := Errors(err)
	if want := []string{"a", "b; c", "d"}; !slices.Equal(got, want) {
		t.Errorf("Errors = %q, want %q", got, want)
	}
	if Errors(nil) != nil {
		t.Error("Errors(nil) not empty")
	}
}

func TestErrorBoundsTheMessageAndKeepsTheChain(t *testing.T) {
	base := errors.New(strings.Repeat("y", 100000))
	err := Error(fmt.Errorf("wrapped: %w", base))
	if len(err.Error()) > Message {
		t.Errorf("Error() is %d bytes", len(err.Error()))
	}
	if !errors.Is(err, base) {
		t.Error("errors.Is lost the cause")
	}
	short := errors.New("short")
	if Error(short) != short || Error(nil) != nil {
		t.Error("short errors must pass unchanged")
	}
}
