package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// The linker drops the EC2 SDK's ~700 operations the operator never calls
// only while nothing reachable in the binary looks methods up by name at
// run time; text/template's executor does, and once it was linked every
// operation stayed: a 122 MB binary instead of 55 MB, and most of the
// operator's RSS. A package may import text/template (cel-go does, for a
// function the operator never calls) as long as its executor is not
// linked, so the test reads the built binaries' symbols, not the imports.
func TestNoRuntimeMethodLookupIsLinked(t *testing.T) {
	for _, pkg := range []string{"./cmd/eni-operator", "./cmd/eni-agent"} {
		bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
		testenv.BuildCommand(t, pkg, bin)
		out, err := exec.Command("go", "tool", "nm", bin).Output()
		if err != nil {
			t.Fatalf("go tool nm %s: %v", bin, err)
		}
		syms := string(out)
		for _, banned := range []string{"text/template.(*state).evalCall", "html/template.(*Template).Execute"} {
			if strings.Contains(syms, banned) {
				t.Errorf("%s links %s: find what calls it (go build -ldflags=-dumpdep %s 2>&1 | grep template) and remove it", pkg, banned, pkg)
			}
		}
		// An EC2 operation nothing here calls: present only if the linker
		// kept every method.
		if strings.Contains(syms, "service/ec2.(*Client).AcceptAddressTransfer") {
			t.Errorf("%s keeps EC2 operations it never calls: something reachable looks methods up by name (reflect.Value.MethodByName)", pkg)
		}
	}
}
