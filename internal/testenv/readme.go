package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// GeneratedSection is a part of README.md written from a test's data,
// between the lines Begin and End.
type GeneratedSection struct {
	Begin, End string // whole lines, without their newline
	Content    string
}

// CheckREADME fails the test for each section whose text in README.md
// differs from its content; with ENI_UPDATE_README=1 it rewrites them
// instead, so the README cannot drift from the data it shows.
func CheckREADME(t testing.TB, sections []GeneratedSection) {
	t.Helper()
	root := Root(t)
	path := filepath.Join(root, "README.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, s := range sections {
		begin := s.Begin + "\n"
		i, j := strings.Index(readme, begin), strings.Index(readme, s.End)
		if i < 0 || j < i {
			t.Errorf("README.md lacks the lines\n%s...\n%s", begin, s.End)
			continue
		}
		if readme[i+len(begin):j] == s.Content {
			continue
		}
		if os.Getenv("ENI_UPDATE_README") == "" {
			t.Errorf("README.md between %q and %q differs from the data; rerun with ENI_UPDATE_README=1. Want:\n%s", s.Begin, s.End, s.Content)
			continue
		}
		readme = readme[:i+len(begin)] + s.Content + readme[j:]
	}
	if readme != string(b) {
		if err := os.WriteFile(path, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("README.md rewritten")
	}
}
