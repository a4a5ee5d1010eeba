package tagplan

import (
	"maps"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/tagkeys"
)

func TestParseAnnotation(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]string
		err      string
	}{
		{name: "empty", in: "", want: map[string]string{}},
		{name: "blank", in: "  ", want: map[string]string{}},
		{name: "json", in: `{"Team":"Dev","Cost":"1"}`, want: map[string]string{"Team": "Dev", "Cost": "1"}},
		{name: "json empty object", in: `{}`, want: map[string]string{}},
		{name: "json value with comma and equals", in: `{"Desc":"a=b,c"}`, want: map[string]string{"Desc": "a=b,c"}},
		{name: "json empty value", in: `{"K":""}`, want: map[string]string{"K": ""}},
		{name: "pairs", in: "Team=Dev,Cost=1", want: map[string]string{"Team": "Dev", "Cost": "1"}},
		{name: "pairs with spaces", in: " Team = Dev , Cost=1 ", want: map[string]string{"Team": "Dev", "Cost": "1"}},
		{name: "pairs value with equals", in: "Expr=a=b", want: map[string]string{"Expr": "a=b"}},
		{name: "pairs empty value", in: "K=", want: map[string]string{"K": ""}},
		{name: "malformed json", in: `{"Team":"Dev"`, err: "malformed JSON"},
		{name: "json trailing data", in: `{"a":"b"} x`, err: "after the closing brace"},
		{name: "json number", in: `{"Cost":1}`, err: `the value of key "Cost" must be a JSON string, got a number`},
		{name: "json bool", in: `{"On":true}`, err: "got a boolean"},
		{name: "json null", in: `{"On":null}`, err: "got null"},
		{name: "json object value", in: `{"On":{}}`, err: "got an object"},
		{name: "json duplicate", in: `{"a":"1","a":"2"}`, err: `duplicate key "a"`},
		{name: "json empty key", in: `{"":"x"}`, err: `tag "": the key is empty`},
		// Issue 25: NULs smuggled reserved ownership tags through the
		// NUL-joined tag-set encoding.
		{name: "json NUL smuggling reserved keys", in: attackAnnotation, err: `tag "A": the value holds U+0000, a control character, at byte 1`},
		{name: "json NUL in a key", in: `{"x\u0000Note":"v"}`, err: "the key holds U+0000"},
		{name: "json escaped control character", in: `{"Team":"a\u001bb"}`, err: "U+001B"},
		{name: "json C1 control character", in: `{"Team":"a\u0085"}`, err: "U+0085"},
		{name: "json DEL", in: "{\"Team\":\"a\x7f\"}", err: "U+007F"},
		{name: "json invalid UTF-8", in: "{\"Team\":\"\xff\"}", err: "not valid UTF-8"},
		{name: "json key with a leading space", in: `{" Team":"Dev"}`, err: `tag " Team": the key begins with white space (U+0020)`},
		{name: "json key with a trailing space", in: `{"Team ":"Dev"}`, err: "the key ends with white space (U+0020)"},
		{name: "json key with a trailing no-break space", in: `{"Team\u00a0":"Dev"}`, err: "ends with white space (U+00A0)"},
		{name: "json key with inner spaces", in: `{"Cost center":" Dev "}`, want: map[string]string{"Cost center": " Dev "}},
		{name: "json every problem", in: `{"a":"\u0000","b ":"x"}`, err: `tag "a": the value holds U+0000`},
		{name: "pairs NUL smuggling reserved keys", in: "A=x\x00eni-operator.io/cluster\x00sandbox,D=x\x00Note", err: "U+0000"},
		{name: "pairs newline inside", in: "A=x\ny", err: "U+000A"},
		{name: "pairs key trimmed of no-break space", in: "Team\u00a0=Dev", want: map[string]string{"Team": "Dev"}},
		{name: "pairs invalid UTF-8", in: "\xff=\xfe", err: "not valid UTF-8"},
		{name: "json array", in: `["a"]`, err: "not key=value"},
		{name: "pairs duplicate", in: "a=1,a=2", err: `duplicate key "a"`},
		{name: "pairs empty key", in: "=x", err: "has an empty key"},
		{name: "pairs no equals", in: "a=1,b", err: `entry 2 ("b") is not key=value`},
		{name: "pairs empty entry", in: "a=1,,b=2", err: "entry 2 is empty"},
		{name: "pairs trailing comma", in: "a=1,", err: "entry 2 is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAnnotation(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseAnnotation(%q) error = %v, want one containing %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseAnnotation(%q): %v", tt.in, err)
			}
			if !maps.Equal(got, tt.want) {
				t.Fatalf("ParseAnnotation(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// attackAnnotation is issue 25's annotation: a value and a key holding
// NULs, so a NUL-joined encoding read them as the NodeENI controller's
// ownership tags and the tagger's hash as a value.
const attackAnnotation = `{"A":"x\u0000eni-operator.io/cluster\u0000sandbox\u0000eni-operator.io/nodeeni\u0000n\u0000eni-operator.io/node\u0000ip-10-0-0-1\u0000","D":"x\u0000Note"}`

// FuzzParseAnnotation checks that no input panics and that every accepted
// input yields keys and values the character rule accepts.
func FuzzParseAnnotation(f *testing.F) {
	for _, s := range []string{"", "a=b", "a=b,c=d", `{"a":"b"}`, `{"a":1}`, `{"a":"b"`, "=,=", `{"":""}`, `{"a":"b"}}`, "a==b", "\xff=\xfe", attackAnnotation, "a=\x00", `{" a":"b"}`, "\u0085a=b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tags, err := ParseAnnotation(s)
		if err != nil {
			return
		}
		for k, v := range tags {
			if err := tagkeys.CheckTag(k, v); err != nil {
				t.Fatalf("accepted %q=%q from %q: %v", k, v, s, err)
			}
		}
		_, _ = Policy{Namespacing: NamespacingPodNamespace}.Desired("ns", tags)
	})
}
