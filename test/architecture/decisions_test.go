package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// decisions are the packages that decide: pure functions over plain
// values, tested with tables. They cannot do I/O: they import no context,
// no network, file or process package, and nothing that reaches the API
// server or EC2; they read no clock, so time comes in as an argument.
// .golangci.yml's "decisions" rule says the same file by file.
var decisions = []string{
	"internal/awsnode",
	"internal/awstypes",
	"internal/bounded",
	"internal/nodeeni/eniplan",
	"internal/tagger/tagplan",
	"internal/tagkeys",
	"internal/tagpolicy",
}

// noIOImports are the standard packages a decision must not import.
var noIOImports = []string{"context", "net/http", "os", "os/exec", "os/signal", "syscall", "io/fs", "unsafe"}

// noIODeps are the import-path prefixes a decision must not link, even
// through another package: the clients of the API server and of EC2, and
// internal/ec2, the one package that calls EC2.
var noIODeps = []string{
	"sigs.k8s.io/controller-runtime",
	"k8s.io/client-go",
	"github.com/aws/",
	module + "/internal/ec2",
	module + "/internal/kit",
}

// clockReads are the time functions that read or wait on the wall clock.
var clockReads = []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTicker", "NewTimer"}

func TestDecisionsCannotDoIO(t *testing.T) {
	root := repoRoot(t)
	for _, rel := range decisions {
		pkg := module + "/" + rel
		for _, imp := range goList(t, root, "{{join .Imports \"\\n\"}}", pkg) {
			if slices.Contains(noIOImports, imp) {
				t.Errorf("%s imports %s: a decision package does no I/O; do it in the controller and pass the result in", rel, imp)
			}
		}
		for _, dep := range goList(t, root, "{{.ImportPath}}", "-deps", pkg) {
			for _, bad := range noIODeps {
				if dep == bad || strings.HasPrefix(dep, bad+"/") || (strings.HasSuffix(bad, "/") && strings.HasPrefix(dep, bad)) {
					t.Errorf("%s links %s: a decision package reaches neither the API server nor EC2", rel, dep)
				}
			}
		}
		for _, use := range clockUses(t, filepath.Join(root, rel)) {
			t.Errorf("%s: a decision package reads no clock; take the time as an argument", use)
		}
	}
}

// The check above can fail: a file that reads the clock is caught.
func TestClockUsesFindsTimeNow(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.go"), "package a\n\nimport wall \"time\"\n\nfunc f() int64 { return wall.Now().Unix() }\n")
	writeFile(t, filepath.Join(dir, "a_test.go"), "package a\n\nimport \"time\"\n\nvar _ = time.Now()\n")
	got := clockUses(t, dir)
	if len(got) != 1 || !strings.Contains(got[0], "a.go") || !strings.Contains(got[0], "time.Now") {
		t.Errorf("clockUses = %v, want the one use in a.go", got)
	}
}

// clockUses lists the calls to the time package's clock functions in
// the non-test Go files of dir, whatever name the file imports time as.
func clockUses(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var uses []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		timeName := ""
		for _, imp := range f.Imports {
			if imp.Path.Value == `"time"` {
				timeName = "time"
				if imp.Name != nil {
					timeName = imp.Name.Name
				}
			}
		}
		if timeName == "" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == timeName && slices.Contains(clockReads, sel.Sel.Name) {
				uses = append(uses, fset.Position(sel.Pos()).String()+": time."+sel.Sel.Name)
			}
			return true
		})
	}
	return uses
}

func goList(t *testing.T, root, format string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-f", format}, args...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

func writeFile(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
