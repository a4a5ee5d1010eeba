package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/kit/clitest"
)

// sandboxCommand makes the test binary act as eni-sandbox, so the test
// runs the real command without a separate build.
var sandboxCommand = clitest.Command{Name: "eni-sandbox", Env: "ENI_SANDBOX_TEST_CHILD"}

func TestMain(m *testing.M) {
	sandboxCommand.Main(m, main)
}

// A port in use is said at once, before the control plane or anything
// else starts.
func TestPortInUseIsSaidFirst(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	cmd := sandboxCommand.Cmd("--emulator-listen "+taken.Addr().String()+" --once", os.Environ())
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "address already in use") || !strings.Contains(string(out), "--emulator-listen") {
		t.Fatalf("exit %v, output:\n%s", err, out)
	}
	if strings.Contains(string(out), "starting etcd") || time.Since(start) > 10*time.Second {
		t.Errorf("the sandbox started things (%v) before finding its port taken:\n%s", time.Since(start), out)
	}
}

// The sandbox comes up, tags the demo pods, gets the NodeENI Ready on
// every node — its operator running as its ServiceAccount, under the
// chart's RBAC and admission policies —, serves the operator's health
// endpoints, and on Ctrl-C
// (SIGINT) stops everything: no process it started — kube-apiserver and
// etcd run in process groups of their own — is left behind.
func TestSandboxUpAndCtrlC(t *testing.T) {
	marker := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	cmd := sandboxCommand.Cmd("--emulator-listen 127.0.0.1:0 --timeout 2m", append(os.Environ(), "ENI_SANDBOX_TEST_MARKER="+marker))
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
		regexp.MustCompile(`web-0\s+node-a\d\s+\S+\s+eni-\w+\s+True Synced\s+CostCenter=4410, Team=Payments`),
		regexp.MustCompile(`web-0: policy "cost-allocation" gave "CostCenter" \(enforced\); policy "cost-allocation" enforces "CostCenter"="4410" over the annotation's "1234"`),
		regexp.MustCompile(`api-0\s+.*True Synced\s+CostCenter=4410, Format=json, Service=api, Team=Platform`),
		regexp.MustCompile(`batch-0\s+node-b1\s+.*True Synced\s+CostCenter=4410, Owner=alice, Team=Data`),
		regexp.MustCompile(`cron-0\s+node-b1\s+.*True Synced\s+CostCenter=4410\n`),
		regexp.MustCompile(`cost-allocation\s+4\s+4\s+0\s+True Valid`),
		regexp.MustCompile(`forbidden-0\s+.*False InvalidTags\s+-`),
		regexp.MustCompile(`(?m)^node-a1\s+i-\w+\s+us-east-1a\s+m5.xlarge\s+0\s+eni-\w+\s+demo-a`),
		regexp.MustCompile(`(?m)^\s+2\s+eni-\w+\s+multus-subnet-us-east-1b\s+\S+\s+NodeENI multus-eni-by-name`),
		regexp.MustCompile(`multus-eni-by-name\s+3\s+3\s+True Attached\s+-\s+-\n`),
		// The secondary network: NodeENI data-plane (its subnet selected
		// by tags) on the nodes of us-east-1a, its definition, and the
		// Multus pod's address registered on the ENI.
		regexp.MustCompile(`data-plane\s+2\s+2\s+True Attached\s+True Registered\s+True Synced`),
		regexp.MustCompile(`data-plane: PodAddressesRegistered: Multus pod addresses registered: 1, on the ENIs of 2 nodes`),
		regexp.MustCompile(`(?m)^cnf\s+data-plane\s+data-plane\s+ipvlan l2\s+data\s+whereabouts 10\.0\.40\.0/24 \(10\.0\.40\.192-10\.0\.40\.223\)$`), // the reserved /27
	} {
		if !want.MatchString(report) {
			t.Errorf("report lacks %s:\n%s", want, report)
		}
	}
	checkSecondaryNetwork(t, report)
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
	checkOperatorIdentity(t, report, kubeconfig[1])
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

// run is a sandbox started by a test: the test binary acting as
// eni-sandbox, with its own TMPDIR (where its state directory goes).
type sandboxRun struct {
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr *syncBuffer
	out    *syncBuffer
	up     chan struct{}
	marker string
	tmp    string
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startSandbox starts the sandbox in TMPDIR tmp with args and waits (at
// most 3 minutes) until it says THE SANDBOX IS UP.
func startSandbox(t *testing.T, tmp string, args string) *sandboxRun {
	t.Helper()
	r := &sandboxRun{stderr: &syncBuffer{}, out: &syncBuffer{}, up: make(chan struct{}), tmp: tmp,
		marker: fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())}
	r.cmd = sandboxCommand.Cmd(args, append(os.Environ(), "ENI_SANDBOX_TEST_MARKER="+r.marker, "TMPDIR="+tmp))
	var err error
	if r.stdout, err = r.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	r.cmd.Stderr = r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
			_, _ = r.cmd.Process.Wait()
		}
		killMarked(r.marker) // never leave a control plane behind, even on failure
	})
	go func() {
		sc := bufio.NewScanner(r.stdout)
		signalled := false
		for sc.Scan() {
			_, _ = r.out.Write([]byte(sc.Text() + "\n"))
			if !signalled && strings.HasPrefix(sc.Text(), "THE SANDBOX IS UP") {
				signalled = true
				close(r.up)
			}
		}
	}()
	select {
	case <-r.up:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the sandbox did not come up:\n%s\n%s", r.out.String(), r.stderr.String())
	}
	return r
}

// kubeconfig is the kubeconfig path the sandbox reported; it waits (a
// bounded time) for the line after THE SANDBOX IS UP.
func (r *sandboxRun) kubeconfig(t *testing.T) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^\s+kubeconfig\s+(\S+)`)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(r.out.String()); m != nil {
			return m[1]
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no kubeconfig in the report:\n%s", r.out.String())
	return ""
}

// children lists the processes whose parent is pid, from /proc.
func children(pid int) map[int]string {
	out := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var child int
		if _, err := fmt.Sscan(e.Name(), &child); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[1] != fmt.Sprint(pid) {
			continue
		}
		out[child] = strings.TrimSpace(s[strings.IndexByte(s, '(')+1 : i])
	}
	return out
}

// controlPlaneChildren returns the sandbox's etcd and kube-apiserver.
func controlPlaneChildren(t *testing.T, pid int) map[int]string {
	t.Helper()
	kids := children(pid)
	found := map[string]bool{}
	for _, comm := range kids {
		found[comm] = true
	}
	if !found["etcd"] || !found["kube-apiserver"] {
		t.Fatalf("the sandbox (pid %d) should have etcd and kube-apiserver as children, has %v", pid, kids)
	}
	return kids
}

// waitGone waits (at most 30 s) until none of pids runs (a zombie is
// gone: it waits for its new parent to reap it).
func waitGone(t *testing.T, what string, pids map[int]string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var left []string
		for pid, comm := range pids {
			if st := procState(fmt.Sprint(pid)); st != "" && st != "Z" {
				left = append(left, fmt.Sprintf("%d %s", pid, comm))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still running after 30 s: %v", what, left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitExit waits (at most a minute) for the sandbox to exit.
func (r *sandboxRun) waitExit(t *testing.T) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("the sandbox did not stop within a minute:\n%s", r.stderr.String())
		return nil
	}
}

// Killed with SIGKILL, the sandbox cannot stop anything: etcd and
// kube-apiserver die with it all the same (their parent death signal),
// and its directory — the kubeconfig with administrator credentials,
// etcd's data, the certificates — is removed by the next sandbox.
func TestSandboxSIGKILL(t *testing.T) {
	tmp := t.TempDir()
	r := startSandbox(t, tmp, "--emulator-listen 127.0.0.1:0 --timeout 2m")
	kubeconfig := r.kubeconfig(t)
	kids := controlPlaneChildren(t, r.cmd.Process.Pid)
	if !strings.HasPrefix(kubeconfig, tmp+string(filepath.Separator)) {
		t.Fatalf("kubeconfig %s is not in the sandbox's TMPDIR %s", kubeconfig, tmp)
	}

	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = r.cmd.Wait()
	waitGone(t, "after SIGKILL of the sandbox", kids)
	if left := marked(r.marker); len(left) > 0 {
		t.Fatalf("processes left behind after SIGKILL: %v", left)
	}

	// The next sandbox (same TMPDIR) removes what the killed one left.
	if _, err := os.Stat(kubeconfig); err != nil {
		t.Logf("kubeconfig already gone: %v", err)
	}
	marker := r.marker + "-next"
	next := sandboxCommand.Cmd("--once --emulator-listen 127.0.0.1:0 --timeout 2m", append(os.Environ(), "ENI_SANDBOX_TEST_MARKER="+marker, "TMPDIR="+tmp))
	t.Cleanup(func() { killMarked(marker) })
	var stderr bytes.Buffer
	next.Stderr = &stderr
	if err := next.Run(); err != nil {
		t.Fatalf("the next sandbox: %v\n%s", err, stderr.String())
	}
	if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
		t.Errorf("the killed sandbox's kubeconfig %s is still there after the next sandbox ran: %v", kubeconfig, err)
	}
	if _, err := os.Stat(filepath.Dir(kubeconfig)); !os.IsNotExist(err) {
		t.Errorf("the killed sandbox's directory is still there after the next sandbox ran: %v", err)
	}
	if want := "removed " + filepath.Dir(kubeconfig); !strings.Contains(stderr.String(), want) {
		t.Errorf("the next sandbox did not say %q:\n%s", want, stderr.String())
	}
	if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("left in TMPDIR after the next sandbox: %v", names)
	}
}

// Stopped by SIGTERM or SIGHUP, or finding its output pipe closed (`make
// demo | tee log` and tee died; with SIGPIPE at its default a write would
// kill the sandbox before it stopped anything), the sandbox stops
// everything it started and removes its directory.
func TestSandboxStopsAndCleansUp(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(r *sandboxRun) error
	}{
		{"SIGTERM", func(r *sandboxRun) error { return r.cmd.Process.Signal(syscall.SIGTERM) }},
		{"SIGHUP", func(r *sandboxRun) error { return r.cmd.Process.Signal(syscall.SIGHUP) }},
		{"stdout closed", func(r *sandboxRun) error { return r.stdout.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			r := startSandbox(t, tmp, "--emulator-listen 127.0.0.1:0 --timeout 2m")
			kubeconfig := r.kubeconfig(t)
			kids := controlPlaneChildren(t, r.cmd.Process.Pid)
			if err := tc.stop(r); err != nil {
				t.Fatal(err)
			}
			if err := r.waitExit(t); err != nil {
				t.Fatalf("exit: %v\n%s", err, r.stderr.String())
			}
			waitGone(t, "after the sandbox exited", kids)
			if left := marked(r.marker); len(left) > 0 {
				t.Fatalf("processes left behind: %v", left)
			}
			if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
				t.Errorf("the kubeconfig is still there: %v", err)
			}
			if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("left in TMPDIR: %v", names)
			}
			if !strings.Contains(r.stderr.String(), "stopping kube-apiserver and etcd") {
				t.Errorf("no orderly shutdown on stderr:\n%s", r.stderr.String())
			}
		})
	}
}
