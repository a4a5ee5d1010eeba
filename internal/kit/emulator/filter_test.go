package emulator

import "testing"

func TestWildcardMatch(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"abc", "abc", true},
		{"abc", "abd", false},
		{"a*", "abc", true},
		{"*c", "abc", true},
		{"*", "", true},
		{"a*c", "ac", true},
		{"a*c", "abbbc", true},
		{"a*c", "abbbd", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"10.0.*.5", "10.0.12.5", true},
		{"10.0.*.5", "10.0.12.6", false},
		{`a\*c`, "a*c", true},
		{`a\*c`, "abc", false},
		{`a\?`, "a?", true},
		{`a\?`, "ab", false},
		{"*b*", "aaabaaa", true},
		{"", "", true},
		{"", "a", false},
		{"é?", "éx", true},
	}
	for _, c := range cases {
		if got := wildcardMatch(c.pattern, c.s); got != c.want {
			t.Errorf("wildcardMatch(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}

func TestValidateTags(t *testing.T) {
	long := func(n int) string {
		b := make([]rune, n)
		for i := range b {
			b[i] = 'k'
		}
		return string(b)
	}
	fifty := map[string]string{}
	for i := 0; i < 50; i++ {
		fifty[long(i+1)] = "v"
	}
	cases := []struct {
		name     string
		existing map[string]string
		add      map[string]string
		code     string
	}{
		{"ok", nil, map[string]string{"a": "b"}, ""},
		{"empty key", nil, map[string]string{"": "b"}, "InvalidParameterValue"},
		{"key 127", nil, map[string]string{long(127): ""}, ""},
		{"key 128", nil, map[string]string{long(128): ""}, "InvalidParameterValue"},
		{"value 256", nil, map[string]string{"k": long(256)}, ""},
		{"value 257", nil, map[string]string{"k": long(257)}, "InvalidParameterValue"},
		{"aws prefix any case", nil, map[string]string{"AwS:x": "1"}, "InvalidParameterValue"},
		{"fifty", nil, fifty, ""},
		{"fifty one", map[string]string{"other": "1"}, fifty, "TagLimitExceeded"},
		{"overwrite does not count twice", map[string]string{"k": "1"}, fifty, ""},
		{"aws tags do not count", map[string]string{"aws:cloudformation:stack": "1"}, fifty, ""},
	}
	for _, c := range cases {
		err := validateTags(c.existing, c.add)
		got := ""
		if err != nil {
			got = err.Code
		}
		if got != c.code {
			t.Errorf("%s: got %q, want %q", c.name, got, c.code)
		}
	}
}
