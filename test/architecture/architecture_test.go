// Package architecture checks what the production binaries link, that
// the layout says what ships (internal/kit holds what does not), and that
// the lint tool is pinned once. .golangci.yml's depguard rules keep
// imports in place file by file; this test is the guarantee for what
// actually ends up in eni-operator and eni-agent, transitive imports
// included.
package architecture

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/cachedbin"
)

const module = "github.com/eni-operator/eni-operator"

// testOnly says why a package of this module must not be linked into a
// production binary, or "" when it may.
func testOnly(pkg string) string {
	rel, ok := strings.CutPrefix(pkg, module+"/")
	if !ok {
		return ""
	}
	switch {
	case rel == "internal/kit" || strings.HasPrefix(rel, "internal/kit/"):
		return "internal/kit is the demo and test kit (emulator, sandbox, testenv, controlplane)"
	case rel == "test" || strings.HasPrefix(rel, "test/"):
		return "test/ holds test suites"
	case strings.HasSuffix(rel, "test"):
		// Go's httptest convention: a package named *test is a test kit.
		return "a package named *test is a test kit"
	}
	return ""
}

func TestTestOnly(t *testing.T) {
	for pkg, want := range map[string]bool{
		module + "/internal/kit/emulator":          true,
		module + "/internal/kit/testenv":           true,
		module + "/internal/kit/controlplane":      true,
		module + "/internal/kit/cachedbin":         true,
		module + "/internal/ec2/ec2test":           true,
		module + "/internal/operator/operatortest": true,
		module + "/internal/kit/clitest":           true,
		module + "/test/chart":                     true,
		module + "/internal/ec2":                   false,
		module + "/internal/tagkeys":               false,
		"net/http/httptest":                        false,
	} {
		if got := testOnly(pkg) != ""; got != want {
			t.Errorf("testOnly(%s) = %v, want %v", pkg, got, want)
		}
	}
}

// Neither production binary links the emulator, testenv or a test kit,
// directly or through another package.
func TestProductionBinariesLinkNoTestCode(t *testing.T) {
	root := repoRoot(t)
	for _, bin := range shipped {
		deps := imageList(t, root, "-deps", bin)
		if len(deps) < 10 || !slices.Contains(deps, module+"/internal/version") {
			t.Fatalf("go list -deps %s listed %d packages, without internal/version: not the binary's dependencies", bin, len(deps))
		}
		for _, dep := range deps {
			if why := testOnly(dep); why != "" {
				t.Errorf("%s links %s: %s; production binaries must not contain it", bin, dep, why)
			}
		}
	}
}

// The Makefile's GOLANGCI_LINT_VERSION and hack/golangci-lint-binary.sh's
// default are the same version (the script also runs without make).
func TestGolangciLintVersionPinnedOnce(t *testing.T) {
	root := repoRoot(t)
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	mk := regexp.MustCompile(`(?m)^GOLANGCI_LINT_VERSION \?= (\S+)$`).FindSubmatch(read("Makefile"))
	sh := regexp.MustCompile(`(?m)^GOLANGCI_LINT_VERSION="\$\{GOLANGCI_LINT_VERSION:-(\S+)\}"$`).FindSubmatch(read("hack/golangci-lint-binary.sh"))
	if mk == nil || sh == nil || string(mk[1]) != string(sh[1]) {
		t.Errorf("GOLANGCI_LINT_VERSION: Makefile %q, hack/golangci-lint-binary.sh %q", mk, sh)
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := cachedbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}
