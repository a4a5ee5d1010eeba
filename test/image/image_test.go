// Package image tests `make image` (hack/image): the operator's and the
// agent's images built without a container runtime, read back with
// go-containerregistry: their configuration (user, entrypoint, labels,
// platform), their file system (the binaries, passwd, the CA roots,
// /tmp), the operator binary taken out of the layer and run, a second
// build giving the same digests, and the Dockerfile describing the same
// images.
package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/eni-operator/eni-operator/internal/kit/cachedbin"
)

const (
	version = "v9.8.7-imagetest"
	source  = "https://github.com/eni-operator/eni-operator"
)

// want is what each image must be.
var want = map[string]struct {
	file, tag, user, stage string
	entrypoint             []string
	binaries               []string
}{
	"operator": {file: "eni-operator-image.tar", tag: "example.com/eni/op:" + version, user: "65532:65532", stage: "operator",
		entrypoint: []string{"/eni-operator"}, binaries: []string{"eni-operator", "eni-agent"}},
	"agent": {file: "eni-agent-image.tar", tag: "example.com/eni/agent:" + version, user: "0:0", stage: "agent",
		entrypoint: []string{"/eni-agent"}, binaries: []string{"eni-agent"}},
}

func makeImage(t *testing.T, root, dir string) {
	t.Helper()
	cmd := exec.Command("make", "--no-print-directory", "-C", root, "image",
		"VERSION="+version, "IMAGE_REPO=example.com/eni/op", "IMAGE_AGENT_REPO=example.com/eni/agent",
		"IMAGE_ARCHS="+runtime.GOARCH, "IMAGE_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	t.Logf("make image:\n%s", out)
}

func TestMakeImage(t *testing.T) {
	root, err := cachedbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	revision, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	dir := t.TempDir()
	makeImage(t, root, dir)

	help, err := exec.Command("make", "--no-print-directory", "-C", root, "help").CombinedOutput()
	if err != nil || !regexp.MustCompile(`(?m)^\s*image\b`).Match(help) {
		t.Errorf("make help does not list image (%v):\n%s", err, help)
	}
	if bytes.Contains(help, []byte("\x1b[")) {
		t.Errorf("make help writes colour codes into a pipe:\n%q", help)
	}

	dockerfile := dockerfileStages(t, filepath.Join(root, "Dockerfile"))
	digests := map[string]v1.Hash{}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, w.file)
			img, err := tarball.ImageFromPath(path, nil)
			if err != nil {
				t.Fatalf("reading %s: %v", path, err)
			}
			if d, err := img.Digest(); err != nil {
				t.Fatal(err)
			} else {
				digests[name] = d
			}
			// The tarball's tag, as docker load sees it.
			if _, err := tarball.ImageFromPath(path, mustTag(t, w.tag)); err != nil {
				t.Errorf("%s is not tagged %s: %v", w.file, w.tag, err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
				t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
			}
			if cf.Config.User != w.user || !slices.Equal(cf.Config.Entrypoint, w.entrypoint) || len(cf.Config.Cmd) != 0 {
				t.Errorf("user %q entrypoint %q cmd %q; want user %q entrypoint %q and no cmd", cf.Config.User, cf.Config.Entrypoint, cf.Config.Cmd, w.user, w.entrypoint)
			}
			if name == "operator" {
				if u := strings.Split(cf.Config.User, ":")[0]; u == "" || u == "0" || u == "root" {
					t.Errorf("the operator image runs as %q, want a non-root uid", cf.Config.User)
				}
			}
			labels := cf.Config.Labels
			for k, v := range map[string]string{
				"org.opencontainers.image.source":   source,
				"org.opencontainers.image.version":  version,
				"org.opencontainers.image.revision": strings.TrimSpace(string(revision)),
			} {
				if labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, labels[k], v)
				}
			}

			files := extract(t, img)
			for _, b := range w.binaries {
				h, ok := files["/"+b]
				if !ok || h.hdr.Mode&0o111 == 0 {
					t.Errorf("/%s missing or not executable", b)
				}
			}
			for _, b := range []string{"eni-operator", "eni-agent"} {
				if _, ok := files["/"+b]; ok && !slices.Contains(w.binaries, b) {
					t.Errorf("/%s in the %s image", b, name)
				}
			}
			checkBase(t, files)

			// The binary out of the layer runs (static: no loader, no libc).
			bin := filepath.Join(t.TempDir(), w.binaries[0])
			if err := os.WriteFile(bin, files["/"+w.binaries[0]].data, 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, "--version").CombinedOutput()
			if err != nil {
				t.Fatalf("%s --version: %v\n%s", w.binaries[0], err, out)
			}
			if name == "operator" && !strings.HasPrefix(string(out), "eni-operator "+version) {
				t.Errorf("eni-operator --version printed %q, want eni-operator %s …", out, version)
			}
			if ldd, err := exec.Command("file", bin).Output(); err == nil && !strings.Contains(string(ldd), "statically linked") {
				t.Errorf("%s is not static: %s", w.binaries[0], ldd)
			}

			// The Dockerfile's stage builds the same image.
			st, ok := dockerfile[w.stage]
			if !ok {
				t.Fatalf("the Dockerfile has no stage %s", w.stage)
			}
			if st.from != "scratch" {
				t.Errorf("the Dockerfile's %s stage is FROM %s; the image has no base (scratch)", w.stage, st.from)
			}
			if st.user != w.user || !slices.Equal(st.entrypoint, w.entrypoint) {
				t.Errorf("the Dockerfile's %s stage: USER %q ENTRYPOINT %q; make image: %q %q", w.stage, st.user, st.entrypoint, w.user, w.entrypoint)
			}
			for k := range labels {
				if !slices.Contains(st.labels, k) {
					t.Errorf("the Dockerfile's %s stage lacks the label %s", w.stage, k)
				}
			}
			for _, b := range w.binaries {
				if !slices.Contains(st.copied, "/"+b) {
					t.Errorf("the Dockerfile's %s stage does not copy /%s", w.stage, b)
				}
			}
		})
	}

	// Same commit, same flags: same images.
	again := t.TempDir()
	makeImage(t, root, again)
	for name, w := range want {
		img, err := tarball.ImageFromPath(filepath.Join(again, w.file), nil)
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := img.Digest(); d != digests[name] {
			t.Errorf("the %s image is not reproducible: %s, then %s", name, digests[name], d)
		}
	}
}

type file struct {
	hdr  *tar.Header
	data []byte
}

// extract reads the image's flattened file system, keyed by absolute path.
func extract(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	files := map[string]file{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files["/"+strings.Trim(h.Name, "/")] = file{hdr: h, data: data}
	}
}

// checkBase checks what a static Go binary needs of the file system.
func checkBase(t *testing.T, files map[string]file) {
	t.Helper()
	passwd := string(files["/etc/passwd"].data)
	if !strings.Contains(passwd, "\nnonroot:x:65532:65532:") || !strings.HasPrefix(passwd, "root:x:0:0:") {
		t.Errorf("/etc/passwd lacks root or nonroot (65532):\n%s", passwd)
	}
	if !strings.Contains(string(files["/etc/group"].data), "nonroot:x:65532:") {
		t.Error("/etc/group lacks nonroot (65532)")
	}
	if tmp, ok := files["/tmp"]; !ok || tmp.hdr.Typeflag != tar.TypeDir || tmp.hdr.Mode&0o7777 != 0o1777 {
		t.Errorf("/tmp missing or not 1777: %+v", tmp.hdr)
	}
	for p, f := range files {
		if f.hdr.Uid != 0 || f.hdr.Gid != 0 {
			t.Errorf("%s is owned by %d:%d; every file is root's (the binaries run from a read-only root)", p, f.hdr.Uid, f.hdr.Gid)
		}
	}
	pool := x509.NewCertPool()
	ca := files["/etc/ssl/certs/ca-certificates.crt"].data
	if !pool.AppendCertsFromPEM(ca) || bytes.Count(ca, []byte("BEGIN CERTIFICATE")) < 100 {
		t.Fatalf("/etc/ssl/certs/ca-certificates.crt: %d certificates", bytes.Count(ca, []byte("BEGIN CERTIFICATE")))
	}
	// EC2's and STS' endpoints chain to Amazon's roots.
	amazon := false
	for rest := ca; ; {
		var blk *pem.Block
		if blk, rest = pem.Decode(rest); blk == nil {
			break
		}
		if c, err := x509.ParseCertificate(blk.Bytes); err == nil && c.Subject.CommonName == "Amazon Root CA 1" {
			amazon = true
		}
	}
	if !amazon {
		t.Error("the CA bundle lacks Amazon Root CA 1")
	}
}

// stage is what a Dockerfile stage says about its image.
type stage struct {
	from, user string
	entrypoint []string
	labels     []string // keys
	copied     []string // destinations of COPY
}

// dockerfileStages reads the Dockerfile's stages by name (FROM … AS name).
func dockerfileStages(t *testing.T, path string) map[string]*stage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Join continuation lines, drop comments.
	var lines []string
	cur := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") || l == "" {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		lines = append(lines, cur+l)
		cur = ""
	}
	stages := map[string]*stage{}
	var st *stage
	for _, l := range lines {
		f := strings.Fields(l)
		switch strings.ToUpper(f[0]) {
		case "FROM":
			args := slices.DeleteFunc(f[1:], func(s string) bool { return strings.HasPrefix(s, "--platform") })
			st = &stage{from: args[0]}
			if base, ok := stages[args[0]]; ok { // FROM an earlier stage: what it says holds here too
				st = &stage{from: base.from, user: base.user, entrypoint: slices.Clone(base.entrypoint),
					labels: slices.Clone(base.labels), copied: slices.Clone(base.copied)}
			}
			if len(args) == 3 && strings.EqualFold(args[1], "AS") {
				stages[args[2]] = st
			}
		case "USER":
			st.user = f[1]
		case "ENTRYPOINT":
			for _, m := range regexp.MustCompile(`"([^"]*)"`).FindAllStringSubmatch(l, -1) {
				st.entrypoint = append(st.entrypoint, m[1])
			}
		case "LABEL":
			for _, kv := range f[1:] {
				st.labels = append(st.labels, strings.SplitN(kv, "=", 2)[0])
			}
		case "COPY":
			if st != nil {
				st.copied = append(st.copied, f[len(f)-1])
			}
		}
	}
	return stages
}

func mustTag(t *testing.T, s string) *name.Tag {
	t.Helper()
	tag, err := name.NewTag(s)
	if err != nil {
		t.Fatal(err)
	}
	return &tag
}
