package tagger

import (
	"maps"
	"strings"
	"testing"
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
		{name: "json empty key", in: `{"":"x"}`, err: "a tag key is empty"},
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

// FuzzParseAnnotation checks that no input panics and that every accepted
// input yields non-empty keys.
func FuzzParseAnnotation(f *testing.F) {
	for _, s := range []string{"", "a=b", "a=b,c=d", `{"a":"b"}`, `{"a":1}`, `{"a":"b"`, "=,=", `{"":""}`, `{"a":"b"}}`, "a==b", "\xff=\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tags, err := ParseAnnotation(s)
		if err != nil {
			return
		}
		for k := range tags {
			if k == "" {
				t.Fatalf("accepted an empty key from %q", s)
			}
		}
		_, _ = Policy{Namespacing: NamespacingPodNamespace}.Desired("ns", tags)
	})
}
