package ec2

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/cachedbin"
)

// Exactly one package of the operator knows the EC2 SDK (docs/architecture.md); the
// emulator and its conformance suite are the declared exceptions.
func TestOnlyThisPackageImportsTheEC2SDK(t *testing.T) {
	root, err := cachedbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{"internal/ec2/", "internal/kit/emulator/", "test/ec2conformance/"}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		for _, a := range allowed {
			if strings.HasPrefix(rel, a) {
				return nil
			}
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, "github.com/aws/aws-sdk-go-v2/service/ec2") {
				t.Errorf("%s imports %s: go through internal/ec2 instead", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
