package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv makes the test binary act as eni-sandbox, so the test runs the
// real command without a separate build.
const childEnv = "ENI_SANDBOX_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Args = append([]string{"eni-sandbox"}, strings.Fields(os.Getenv(childEnv+"_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The sandbox comes up, tags the demo pods, gets the NodeENI Ready on
// every node, serves the operator's health endpoints, and on Ctrl-C
// (SIGINT) stops everything: no process it started — kube-apiserver and
// etcd run in process groups of their own — is left behind.
func TestSandboxUpAndCtrlC(t *testing.T) {
	marker := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", childEnv+"_ARGS=--emulator-listen 127.0.0.1:0 --timeout 2m",
		"ENI_SANDBOX_TEST_MARKER="+marker)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_, _ = cmd.Process.Wait()
		}
		killMarked(marker) // never leave a control plane behind, even on failure
	}()

	var out bytes.Buffer
	up := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if !signalled && strings.HasPrefix(sc.Text(), "Running. Press Ctrl-C") {
				signalled = true
				close(up)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case <-up:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the sandbox did not come up:\n%s\n%s", out.String(), stderr.String())
	}
	report := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`web-0\s+node-a\d\s+\S+\s+eni-\w+\s+True Synced\s+CostCenter=1234, Team=Payments`),
		regexp.MustCompile(`api-0\s+.*True Synced\s+Format=json, Service=api, Team=Platform`),
		regexp.MustCompile(`batch-0\s+node-b1\s+.*True Synced\s+Owner=alice, Team=Data`),
		regexp.MustCompile(`forbidden-0\s+.*False InvalidTags\s+-`),
		regexp.MustCompile(`(?m)^node-a1\s+i-\w+\s+us-east-1a\s+m5.xlarge\s+0\s+eni-\w+\s+demo-a`),
		regexp.MustCompile(`(?m)^\s+2\s+eni-\w+\s+multus-subnet-us-east-1b\s+\S+\s+NodeENI multus-eni-by-name`),
		regexp.MustCompile(`multus-eni-by-name\s+3\s+3\s+True Attached`),
	} {
		if !want.MatchString(report) {
			t.Errorf("report lacks %s:\n%s", want, report)
		}
	}
	// The NodeENI ENI appears on all three nodes.
	if n := strings.Count(report, "NodeENI multus-eni-by-name"); n != 3 {
		t.Errorf("%d NodeENI ENIs in the node table, want 3:\n%s", n, report)
	}
	m := regexp.MustCompile(`health (http://\S+)/healthz`).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("no health endpoint in the report:\n%s", report)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(m[1] + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %s", path, resp.Status)
		}
	}
	kubeconfig := regexp.MustCompile(`kubeconfig\s+(\S+)`).FindStringSubmatch(report)
	if kubeconfig == nil {
		t.Fatalf("no kubeconfig in the report")
	}
	if _, err := os.Stat(kubeconfig[1]); err != nil {
		t.Errorf("kubeconfig: %v", err)
	}
	if len(marked(marker)) < 3 {
		t.Fatalf("expected the sandbox, etcd and kube-apiserver to carry the marker, found %v", marked(marker))
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after Ctrl-C: %v\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("the sandbox did not stop within a minute of Ctrl-C:\n%s", stderr.String())
	}
	if left := marked(marker); len(left) > 0 {
		t.Fatalf("processes left behind after Ctrl-C: %v", left)
	}
	if _, err := os.Stat(filepath.Dir(kubeconfig[1])); !os.IsNotExist(err) {
		t.Errorf("the sandbox's temporary directory is still there: %v", err)
	}
	if !strings.Contains(stderr.String(), "stopping kube-apiserver and etcd") {
		t.Errorf("no shutdown progress on stderr:\n%s", stderr.String())
	}
}

// marked lists the processes whose environment carries the marker: the
// sandbox and everything it started (children inherit the environment,
// whatever process group they move to).
func marked(marker string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	needle := []byte("ENI_SANDBOX_TEST_MARKER=" + marker)
	for _, e := range entries {
		pid := e.Name()
		if pid[0] < '0' || pid[0] > '9' {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", pid, "environ"))
		if err != nil || !bytes.Contains(env, needle) {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", pid, "comm"))
		if state := procState(pid); state == "Z" {
			continue // a zombie is gone, waiting for its parent to reap it
		}
		out = append(out, pid+" "+strings.TrimSpace(string(comm)))
	}
	return out
}

func procState(pid string) string {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return ""
	}
	// pid (comm) state ...: comm may hold spaces, so cut after the last ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return ""
}

// killMarked kills what a failed run left, so one failure does not leak
// a control plane into the rest of the test run.
func killMarked(marker string) {
	for _, p := range marked(marker) {
		var pid int
		if _, err := fmt.Sscan(strings.Fields(p)[0], &pid); err == nil && pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
