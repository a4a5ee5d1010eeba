package cluster

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
)

// run runs a command to completion, its output in the error.
func run(bin string, args ...string) error {
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %v: %w: %s", filepath.Base(bin), args, err, bytes.TrimSpace(out))
	}
	return nil
}

// output runs a command to completion and returns its standard output.
func output(bin string, args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %v: %w: %s", filepath.Base(bin), args, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return string(out), nil
}
