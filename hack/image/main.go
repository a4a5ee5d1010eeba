// Command image builds the product's container images without a
// container runtime (make image): static binaries (CGO_ENABLED=0) on an
// empty base that holds only what they need, written as image tarballs
// that `docker load`, `podman load` and `crane push` read.
//
//	go run ./hack/image --version v0.1.0 --out bin/
//
// writes, for each --arch:
//
//	bin/eni-operator-image.tar  <repository>:<version>: /eni-operator and
//	    /eni-agent (the chart and config/ run both from it), user
//	    65532:65532, entrypoint /eni-operator
//	bin/eni-agent-image.tar     <agent-repository>:<version>: /eni-agent
//	    only, user 0:0 (the chart runs the agent as uid 0 with NET_ADMIN
//	    only), entrypoint /eni-agent
//
// (amd64 keeps those names; another architecture adds -<arch> before
// .tar.)
//
// The base layer, shared by both images, is the file system distroless
// static:nonroot provides to a static Go binary: /etc/passwd and
// /etc/group (root, nobody, nonroot 65532), /etc/nsswitch.conf, the CA
// bundle at /etc/ssl/certs/ca-certificates.crt and /tmp (1777); no home
// directories (nothing reads them; the root file system is read-only in
// the chart anyway). The CA bundle is Mozilla's NSS roots from
// golang.org/x/crypto/x509roots/fallback, pinned in go.mod and go.sum,
// so every build of a commit ships the same roots whatever machine
// builds it (roots NSS distrusts after a date are left out: a PEM file
// cannot carry that constraint). Every file has a fixed owner and the
// commit's time, so the layers are reproducible.
//
//	go run ./hack/image --rootfs DIR
//
// writes that base file system into DIR instead: the Dockerfile copies it
// onto scratch, so both ways give the same layout.
package main

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// Source is the org.opencontainers.image.source label.
const Source = "https://github.com/eni-operator/eni-operator"

// NonRoot is distroless' nonroot user and group.
const NonRoot = 65532

// entry is a file or directory of an image layer.
type entry struct {
	name string // without a leading slash; directories end in /
	mode int64  // every file is root's
	data []byte
}

// baseFiles is the file system under the binaries.
func baseFiles() []entry {
	passwd := "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n"
	group := "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
	return []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		// Go's resolver reads it: the hosts file, then DNS.
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: caBundle()},
		{name: "root/", mode: 0o700},
		{name: "tmp/", mode: 0o1777},
	}
}

// caBundle is the PEM bundle of the NSS roots without constraints.
func caBundle() []byte {
	var b bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
	}
	return b.Bytes()
}

// Image is what one image holds and how it runs.
type Image struct {
	File       string   // tarball name for amd64
	Repository string   // where it is pushed
	Binaries   []string // commands of cmd/, at /<name>
	User       string
	Entrypoint []string
	Title      string
}

func images(operatorRepo, agentRepo string) []Image {
	return []Image{
		{File: "eni-operator-image.tar", Repository: operatorRepo, Binaries: []string{"eni-operator", "eni-agent"},
			User: fmt.Sprintf("%d:%d", NonRoot, NonRoot), Entrypoint: []string{"/eni-operator"}, Title: "eni-operator"},
		{File: "eni-agent-image.tar", Repository: agentRepo, Binaries: []string{"eni-agent"},
			User: "0:0", Entrypoint: []string{"/eni-agent"}, Title: "eni-agent"},
	}
}

func main() {
	var (
		version   = flag.String("version", "dev", "version stamped into the binaries (--version), the image tag and the version label")
		revision  = flag.String("revision", "", "VCS revision for the revision label (default: git rev-parse HEAD)")
		created   = flag.String("created", "", "image creation time and file times, Unix seconds (default: $SOURCE_DATE_EPOCH, else the last commit's time)")
		opRepo    = flag.String("repository", "ghcr.io/eni-operator/eni-operator", "repository of the operator image (both binaries)")
		agentRepo = flag.String("agent-repository", "ghcr.io/eni-operator/eni-agent", "repository of the agent-only image")
		archs     = flag.String("arch", "amd64", "GOARCH values, separated by commas or spaces (amd64, arm64)")
		out       = flag.String("out", "bin", "directory of the image tarballs")
		rootfs    = flag.String("rootfs", "", "write the base file system into this directory and exit (the Dockerfile's way)")
	)
	flag.Parse()
	o := options{version: *version, revision: *revision, created: *created, opRepo: *opRepo, agentRepo: *agentRepo,
		archs: *archs, out: *out, rootfs: *rootfs}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// options are the command line's flags.
type options struct {
	version, revision, created string
	opRepo, agentRepo          string
	archs, out, rootfs         string
}

// release is what every image of one run shares: the version and
// revision its labels and tags carry, its creation and file times, the
// base files' layer, and the directory the tarballs go to.
type release struct {
	version, revision string
	when              time.Time
	base              v1.Layer
	specs             []Image
	out               string
}

func run(o options) error {
	if o.rootfs != "" {
		return writeRootfs(o.rootfs, baseFiles())
	}
	rel := release{version: o.version, revision: o.revision, specs: images(o.opRepo, o.agentRepo), out: o.out}
	if rel.revision == "" {
		rel.revision = gitOutput("rev-parse", "HEAD")
	}
	var err error
	if rel.when, err = creationTime(o.created); err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	if rel.base, err = layer(baseFiles(), rel.when); err != nil {
		return err
	}
	for _, arch := range strings.FieldsFunc(o.archs, func(r rune) bool { return r == ',' || r == ' ' }) {
		bins, err := os.MkdirTemp("", "eni-image-")
		if err != nil {
			return err
		}
		err = buildImages(rel, bins, arch)
		_ = os.RemoveAll(bins) // a temporary directory
		if err != nil {
			return err
		}
	}
	return nil
}

// buildImages compiles the binaries for linux/arch into bins and writes
// every image of that architecture into out.
func buildImages(rel release, bins, arch string) error {
	if err := build(bins, arch, rel.version); err != nil {
		return err
	}
	for _, spec := range rel.specs {
		file := filepath.Join(rel.out, spec.File)
		if arch != "amd64" {
			file = strings.TrimSuffix(file, ".tar") + "-" + arch + ".tar"
		}
		if err := writeImage(rel, spec, file, bins, arch); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		fmt.Printf("%s  %s:%s  linux/%s\n", file, spec.Repository, rel.version, arch)
	}
	return nil
}

// build compiles the static binaries for linux/arch into dir.
func build(dir, arch, version string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+version, "-o", dir+string(filepath.Separator),
		"./cmd/eni-operator", "./cmd/eni-agent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for linux/%s: %w", arch, err)
	}
	return nil
}

// writeImage writes spec's image for linux/arch, its binaries taken from
// bins, into file.
func writeImage(rel release, spec Image, file, bins, arch string) error {
	when := rel.when
	var files []entry
	for _, b := range spec.Binaries {
		data, err := os.ReadFile(filepath.Join(bins, b))
		if err != nil {
			return err
		}
		files = append(files, entry{name: b, mode: 0o755, data: data})
	}
	top, err := layer(files, when)
	if err != nil {
		return err
	}
	img, err := mutate.Append(empty.Image,
		mutate.Addendum{Layer: rel.base, History: v1.History{Created: v1.Time{Time: when}, CreatedBy: "hack/image: base files (passwd, group, nsswitch.conf, CA roots, /tmp)", Comment: "eni-operator"}},
		mutate.Addendum{Layer: top, History: v1.History{Created: v1.Time{Time: when}, CreatedBy: "hack/image: " + strings.Join(spec.Binaries, ", "), Comment: "eni-operator"}})
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = arch, "linux"
	if arch == "arm64" {
		cf.Variant = "v8"
	}
	cf.Created = v1.Time{Time: when}
	cf.Config = v1.Config{
		User:       spec.User,
		Entrypoint: spec.Entrypoint,
		WorkingDir: "/",
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		Labels:     Labels(spec.Title, rel.version, rel.revision),
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	ref, err := name.NewTag(spec.Repository + ":" + rel.version)
	if err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// Labels are the OCI annotations of both images, the same as the
// Dockerfile's LABEL lines. The creation time is the config's created.
func Labels(title, version, revision string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    title,
		"org.opencontainers.image.source":   Source,
		"org.opencontainers.image.url":      Source,
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
	}
}

// layer is a gzipped tar layer of files, in order, with fixed times.
func layer(files []entry, when time.Time) (v1.Layer, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: when, Format: tar.FormatPAX}
		if strings.HasSuffix(f.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := b.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}

// writeRootfs writes the base files under dir.
func writeRootfs(dir string, files []entry) error {
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(path.Clean(f.name)))
		if strings.HasSuffix(f.name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		} else if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return err
		}
		// Chmod after creation: the umask does not apply, and 1777 keeps
		// its sticky bit.
		if err := os.Chmod(p, fs.FileMode(f.mode&0o777)|modeBits(f.mode)); err != nil {
			return err
		}
	}
	return nil
}

func modeBits(m int64) fs.FileMode {
	if m&0o1000 != 0 {
		return fs.ModeSticky
	}
	return 0
}

func creationTime(flagValue string) (time.Time, error) {
	s := flagValue
	if s == "" {
		s = os.Getenv("SOURCE_DATE_EPOCH")
	}
	if s == "" {
		s = gitOutput("log", "-1", "--format=%ct")
	}
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, errors.New("--created: want Unix seconds, got " + strconv.Quote(s))
	}
	return time.Unix(sec, 0).UTC(), nil
}

func gitOutput(args ...string) string {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
