package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The linker drops the EC2 SDK's ~700 operations the operator never calls
// only while nothing in the binary looks methods up by name at run time;
// text/template does, and one import of it (k8s.io/apiserver through
// controller-runtime's metrics filter did) kept them all: a 122 MB binary
// instead of 55 MB, and most of the operator's RSS. The agent shares
// the rule.
func TestNoRuntimeMethodLookupIsLinked(t *testing.T) {
	for _, pkg := range []string{".", "../eni-agent"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, banned := range []string{"text/template", "html/template"} {
			if slices.Contains(deps, banned) {
				t.Errorf("%s links %s: find the import that brings it (go list -deps -f '{{.ImportPath}} {{.Imports}}') and remove it", pkg, banned)
			}
		}
	}
}
