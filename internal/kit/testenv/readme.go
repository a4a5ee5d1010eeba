package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// GeneratedSection is a part of a document written from a test's data,
// between the lines Begin and End.
type GeneratedSection struct {
	Begin, End string // whole lines, without their newline
	Content    string
}

// CheckDoc fails the test for each section whose text in the document at
// rel (relative to the repository root, e.g. docs/migration.md) differs
// from its content; with ENI_UPDATE_README=1 it rewrites them instead, so
// the docs cannot drift from the data they show.
func CheckDoc(t testing.TB, rel string, sections []GeneratedSection) {
	t.Helper()
	root := Root(t)
	path := filepath.Join(root, rel)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, s := range sections {
		begin := s.Begin + "\n"
		i, j := strings.Index(readme, begin), strings.Index(readme, s.End)
		if i < 0 || j < i {
			t.Errorf("%s lacks the lines\n%s...\n%s", rel, begin, s.End)
			continue
		}
		if readme[i+len(begin):j] == s.Content {
			continue
		}
		if os.Getenv("ENI_UPDATE_README") == "" {
			t.Errorf("%s between %q and %q differs from the data; rerun with ENI_UPDATE_README=1. Want:\n%s", rel, s.Begin, s.End, s.Content)
			continue
		}
		readme = readme[:i+len(begin)] + s.Content + readme[j:]
	}
	if readme != string(b) {
		if err := os.WriteFile(path, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s rewritten", rel)
	}
}
