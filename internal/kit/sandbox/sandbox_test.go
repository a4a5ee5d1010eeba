package sandbox

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/eni-operator/eni-operator/internal/operator"
)

// writeState makes a state directory in tmp owned by pid with start time
// start, naming an outside kubeconfig when given.
func writeState(t *testing.T, tmp, name string, pid int, start, kubeconfig string) string {
	t.Helper()
	dir := filepath.Join(tmp, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	content := strconv.Itoa(pid) + " " + start + "\n"
	if kubeconfig != "" {
		content += kubeconfig + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, pidFileName), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubeconfig"), []byte("admin"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The state directories of dead sandboxes go, with the outside
// kubeconfig they name; a running sandbox's, a reused pid's owner's and
// other directories stay.
func TestSweepStale(t *testing.T) {
	tmp := t.TempDir()
	myStart, err := processStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(outside, []byte("admin"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A pid that cannot run: above the kernel's pid_max (at most 2^22).
	dead := writeState(t, tmp, stateDirPrefix+"dead", 1<<23, "1", outside)
	live := writeState(t, tmp, stateDirPrefix+"live", os.Getpid(), myStart, "")
	// This process's pid, but another start time: the sandbox that
	// owned the directory died and its pid went to another process.
	reused := writeState(t, tmp, stateDirPrefix+"reused", os.Getpid(), myStart+"0", "")
	other := writeState(t, tmp, "other-dead", 1<<23, "1", "")

	swept := SweepStale(tmp)
	var got []string
	for _, s := range swept {
		got = append(got, filepath.Base(s.Dir))
	}
	if want := []string{stateDirPrefix + "dead", stateDirPrefix + "reused"}; !reflect.DeepEqual(got, want) {
		t.Errorf("swept %v, want %v", got, want)
	}
	for _, d := range []string{dead, reused, outside} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", d, err)
		}
	}
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}

// A state directory starts with its pid file, which names this process.
func TestNewStateDir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	s, err := NewStateDir(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Remove() }()
	if !strings.HasPrefix(filepath.Base(s.Dir), stateDirPrefix) {
		t.Errorf("state directory %s", s.Dir)
	}
	if swept := SweepStale(os.TempDir()); len(swept) > 0 {
		t.Errorf("a running sandbox's directory was swept: %v", swept)
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Remove left %s: %v", s.Dir, err)
	}
}

// A write to a pipe whose reader is gone stops the sandbox instead of
// failing (or, on stdout, killing it).
func TestEPIPEWriter(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	if brokenOutput(w) {
		t.Errorf("a pipe with a reader reported broken")
	}
	_ = r.Close()
	if !brokenOutput(w) {
		t.Errorf("a pipe without a reader not reported broken")
	}
	var reason string
	ew := &EPIPEWriter{W: w, Stop: func(r string) { reason = r }}
	if _, err := ew.Write([]byte("report\n")); err != nil {
		t.Errorf("write: %v", err)
	}
	if reason == "" {
		t.Errorf("EPIPE did not stop the sandbox")
	}
}

// The sandbox's operator is eni-operator's production configuration:
// only the flags it reports differ, and the one behaviour it changes
// (plain HTTP metrics) is marked as a deviation.
func TestOperatorConfigIsProduction(t *testing.T) {
	prod := operator.DefaultConfig()
	fs := flag.NewFlagSet("eni-operator", flag.ContinueOnError)
	prod.BindFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	got, changes, err := operatorConfig("vpc-0123456789abcdef0", "127.0.0.1:1", "127.0.0.1:2", "v1")
	if err != nil {
		t.Fatal(err)
	}
	prod.Tagger.Namespace = operatorNamespace
	if !reflect.DeepEqual(got.Tagger, prod.Tagger) {
		t.Errorf("tagger options differ from production:\n got %+v\nprod %+v", got.Tagger, prod.Tagger)
	}
	if !reflect.DeepEqual(got.NodeENI, prod.NodeENI) {
		t.Errorf("NodeENI options differ from production:\n got %+v\nprod %+v", got.NodeENI, prod.NodeENI)
	}
	prod.EC2.VPCID = "vpc-0123456789abcdef0"
	if !reflect.DeepEqual(got.EC2, prod.EC2) {
		t.Errorf("EC2 options differ from production:\n got %+v\nprod %+v", got.EC2, prod.EC2)
	}
	if got.LeaderElection != prod.LeaderElection || got.KubeQPS != prod.KubeQPS || got.KubeBurst != prod.KubeBurst ||
		got.GracefulShutdownTimeout != prod.GracefulShutdownTimeout || got.EnableTagger != prod.EnableTagger || got.PprofAddr != prod.PprofAddr {
		t.Errorf("manager options differ from production:\n got %+v\nprod %+v", got, prod)
	}
	if got.MetricsSecure || got.ClusterName != ClusterName || got.MetricsAddr != "127.0.0.1:1" || got.ProbeAddr != "127.0.0.1:2" {
		t.Errorf("the sandbox's flags not applied: %+v", got)
	}
	var deviations []string
	for _, c := range changes {
		if c.Deviation {
			deviations = append(deviations, c.String())
		}
	}
	if len(deviations) != 1 || !strings.HasPrefix(deviations[0], "changed from production defaults: --metrics-secure=false (plain HTTP on loopback") {
		t.Errorf("deviations reported: %q", deviations)
	}
}

// The report tells how to reach the sandbox: both AWS region variables
// (AWS CLI v1 reads only AWS_DEFAULT_REGION), the flags the operator runs
// with, who the operator is and what limits it, and how to delete a pod
// with no kubelet.
func TestPrintAccess(t *testing.T) {
	_, changes, err := operatorConfig("vpc-0123456789abcdef0", "127.0.0.1:1", "127.0.0.1:2", "v1")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	printAccess(&b, accessInfo{kubeconfig: "/tmp/x/kubeconfig", kubectl: "/bin/kubectl", endpoint: "http://127.0.0.1:4566",
		metrics: "127.0.0.1:1", probe: "127.0.0.1:2", log: "/tmp/x/operator.log", apiserver: "https://127.0.0.1:6443", flags: changes,
		identity: describeIdentity(authenticationv1.UserInfo{Username: operatorUser, Groups: []string{"system:serviceaccounts"}}, false)})
	for _, want := range []string{
		"AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1",
		"kubectl delete pod -n demo NAME --grace-period=0 --force",
		"There is no kubelet",
		"changed from production defaults: --metrics-secure=false",
		"--cluster-name=sandbox",
		"production defaults",
		"operator runs as system:serviceaccount:eni-operator:eni-operator (groups system:serviceaccounts): the ServiceAccount, with the chart's RBAC and admission policies",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, b.String())
		}
	}
}
