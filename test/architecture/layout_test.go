package architecture

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// shipped are the commands whose binaries the images contain.
var shipped = []string{"./cmd/eni-operator", "./cmd/eni-agent"}

// kit is the tree of the demo and test kit: the EC2 emulator, the
// sandbox, testenv, controlplane, ... Nothing under it ships.
const kit = module + "/internal/kit"

func inKit(pkg string) bool {
	return pkg == kit || strings.HasPrefix(pkg, kit+"/")
}

// The layout says what ships: every package under internal/ outside
// internal/kit is linked into eni-operator or eni-agent, and none under
// internal/kit is. New demo or test machinery goes under internal/kit.
func TestLayoutSaysWhatShips(t *testing.T) {
	root := repoRoot(t)
	linked := map[string]string{} // package -> a shipped command linking it
	for _, bin := range shipped {
		for _, dep := range imageList(t, root, "-deps", bin) {
			linked[dep] = bin
		}
	}
	if linked[module+"/internal/version"] == "" {
		t.Fatalf("go list -deps %v does not list internal/version: not the images' dependencies", shipped)
	}
	for dep, bin := range linked {
		if inKit(dep) {
			t.Errorf("%s links %s, but it lives under internal/kit, the demo and test kit: move it out of internal/kit or stop importing it", bin, dep)
		}
	}
	internal := imageList(t, root, "./internal/...")
	if !slices.Contains(internal, kit+"/emulator") {
		t.Fatalf("go list ./internal/... does not list internal/kit/emulator: %v", internal)
	}
	for _, pkg := range internal {
		if !inKit(pkg) && linked[pkg] == "" {
			t.Errorf("%s is under internal/ but neither eni-operator nor eni-agent links it: demo and test code goes under internal/kit", pkg)
		}
	}
}

// imageList runs go list for the images' platform (linux, no cgo, as the
// Dockerfile builds) and returns the import paths it prints.
func imageList(t *testing.T, root string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}}"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	return strings.Fields(string(out))
}
