package tagkeys

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The character rule: every control character (C0, DEL, C1) and every
// invalid byte sequence is refused in keys and values, with the code
// point or byte named; white space only at a key's ends; nothing else.
func TestCheckTag(t *testing.T) {
	tests := []struct {
		name, key, value string
		want             []string // substrings of the error; nil: accepted
	}{
		{name: "plain", key: "Team", value: "Dev"},
		{name: "empty value", key: "Team", value: ""},
		{name: "unicode", key: "équipe/日本", value: "naïve ✓ 😀"},
		{name: "inner spaces", key: "cost center", value: " padded value "},
		{name: "U+00A0 inside", key: "a\u00a0b", value: "x"},
		{name: "empty key", key: "", value: "x", want: []string{"key is empty"}},
		{name: "NUL smuggling in a value (issue 25)", key: "A", value: "x\x00eni-operator.io/cluster\x00sandbox\x00",
			want: []string{"value", "U+0000", "control character", "byte 1"}},
		{name: "NUL in a key", key: "x\x00Note", value: "v", want: []string{"key", "U+0000", "byte 1"}},
		{name: "newline", key: "a", value: "line\nbreak", want: []string{"U+000A"}},
		{name: "tab in a key", key: "a\tb", value: "v", want: []string{"U+0009"}},
		{name: "unit separator", key: "a", value: "\x1f", want: []string{"U+001F"}},
		{name: "DEL", key: "a\x7f", value: "v", want: []string{"U+007F"}},
		{name: "C1 first", key: "a", value: "\u0080", want: []string{"U+0080"}},
		{name: "C1 NEL", key: "a", value: "x\u0085", want: []string{"U+0085"}},
		{name: "C1 last", key: "a", value: "\u009f", want: []string{"U+009F"}},
		{name: "invalid UTF-8 key", key: "ab\xff", value: "v", want: []string{"key", "not valid UTF-8", "0xFF", "byte 2"}},
		{name: "invalid UTF-8 value", key: "a", value: "\xc3", want: []string{"value", "not valid UTF-8", "0xC3"}},
		{name: "key with a leading space", key: " Team", value: "v", want: []string{"key", "begins with white space", "U+0020"}},
		{name: "key with a trailing space", key: "Team ", value: "v", want: []string{"key", "ends with white space", "U+0020"}},
		{name: "key with a trailing no-break space", key: "Team\u00a0", value: "v", want: []string{"ends with white space", "U+00A0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckTag(tc.key, tc.value)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if !utf8.ValidString(err.Error()) || strings.ContainsFunc(err.Error(), unicode.IsControl) {
				t.Errorf("the error quotes what it refuses: %q", err)
			}
		})
	}
}

// Every code point is tried once: exactly the Unicode category Cc is
// refused, in keys and in values.
func TestCheckValueEveryControlCharacter(t *testing.T) {
	for r := rune(0); r <= 0x10FFFF; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		s := "a" + string(r) + "b"
		want := r <= 0x1f || (r >= 0x7f && r <= 0x9f)
		if got := CheckValue(s) != nil; got != want {
			t.Fatalf("U+%04X: refused %v, want %v", r, got, want)
		}
		if got := CheckKey(s) != nil; got != want {
			t.Fatalf("key with U+%04X: refused %v, want %v", r, got, want)
		}
	}
}
