package tagplan

import (
	"maps"
	"strings"
	"testing"
)

func TestMergeShared(t *testing.T) {
	merged, conflicts := MergeShared(map[string]map[string]string{
		"ns/a": {"Team": "Dev", "App": "a", "Env": "prod"},
		"ns/b": {"Team": "Dev", "App": "b"},
		"ns/c": {"Env": "prod"},
	})
	if want := (map[string]string{"Team": "Dev", "Env": "prod"}); !maps.Equal(merged, want) {
		t.Fatalf("merged = %v, want %v", merged, want)
	}
	if len(conflicts) != 1 || !strings.Contains(conflicts["App"], `ns/a wants "a"`) || !strings.Contains(conflicts["App"], `ns/b wants "b"`) {
		t.Fatalf("conflicts = %v", conflicts)
	}
	if m, c := MergeShared(nil); len(m) != 0 || len(c) != 0 {
		t.Fatal("empty input gives output")
	}
}
