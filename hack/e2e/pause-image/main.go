// Command pause-image builds the e2e node's pause image the way make image
// builds the product's (hack/image): a static binary (hack/e2e/pause) in
// one layer on an empty base, written as an image tarball that
// `ctr images import` reads. No registry is reachable here, so containerd
// gets its sandbox image from this file.
//
//	go run ./hack/e2e/pause-image --out bin/e2e-pause-image.tar --ref eni-e2e.local/pause:e2e
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	out := flag.String("out", "bin/e2e-pause-image.tar", "image tarball to write")
	ref := flag.String("ref", "eni-e2e.local/pause:e2e", "image reference (containerd's sandbox_image)")
	flag.Parse()
	if err := run(*out, *ref); err != nil {
		fmt.Fprintln(os.Stderr, "pause-image:", err)
		os.Exit(1)
	}
}

func run(out, ref string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "pause-image")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin := filepath.Join(dir, "pause")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./hack/e2e/pause")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building the pause binary: %w", err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	layer, err := binaryLayer("pause", data)
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Entrypoint = []string{"/pause"}
	cf.Config.User = "65535:65535"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return tarball.WriteToFile(out, tag, img)
}

// binaryLayer is a layer holding one executable at /<file>.
func binaryLayer(file string, data []byte) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: file, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}
