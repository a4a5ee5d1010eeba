// Package generated checks that the generated files in the repository are
// what their generators make of the current code: CRDs and RBAC roles
// (controller-gen, from the code's markers), the deepcopy code, and the
// Helm chart's copies of the CRDs and roles.
package generated

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/cachedbin"
)

// generatedTrees are the paths `make generate manifests` writes to.
var generatedTrees = []string{"api", "config", "charts"}

// The test regenerates in a copy of the repository, so a stale checkout is
// reported rather than silently fixed, then compares file by file.
func TestGeneratedFilesAreFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("runs controller-gen over the whole module (~30-60 s)")
	}
	root, err := cachedbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := copyRepo(root, work); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "--no-print-directory", "generate", "manifests")
	cmd.Dir = work
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("make generate manifests: %v\n%s", err, out.String())
	}
	for _, tree := range generatedTrees {
		want := files(t, filepath.Join(work, tree))
		have := files(t, filepath.Join(root, tree))
		for name, content := range want {
			got, ok := have[name]
			switch {
			case !ok:
				t.Errorf("%s/%s is generated but missing from the repository: run make generate manifests", tree, name)
			case !bytes.Equal(got, content):
				t.Errorf("%s/%s is stale: run make generate manifests", tree, name)
			}
		}
	}
}

// copyRepo copies the files git knows of (tracked and untracked, not
// ignored) from root to dst.
func copyRepo(root, dst string) error {
	cmd := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "-z")
	cmd.Dir = root
	list, err := cmd.Output()
	if err != nil {
		return err
	}
	for _, name := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		info, err := os.Lstat(src)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the work tree, or not a plain file
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(name)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, info.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

// files maps the relative path of every file under dir to its content.
func files(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
