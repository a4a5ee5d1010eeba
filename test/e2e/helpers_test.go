package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/ec2"
)

// kubectl runs kubectl as the admin and fails the test on error.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := node.Kubectl(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// helmOutput runs the cached helm binary against the node.
func helmOutput(args ...string) (string, error) {
	bin := os.Getenv("ENI_E2E_HELM")
	if bin == "" {
		return "", fmt.Errorf("ENI_E2E_HELM is not set (make e2e sets it)")
	}
	out, err := exec.Command(bin, append([]string{"--kubeconfig", node.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// apply applies a manifest as the admin.
func apply(t *testing.T, manifest string) {
	t.Helper()
	// Not t.TempDir(): kubectl -f splits a path on its commas, and test
	// names have them.
	f, err := os.CreateTemp("", "e2e-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	_, err = f.WriteString(manifest)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "-f", f.Name())
}

// eventually polls check every half second until it returns nil, and
// fails the test with its last error after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// ec2Client reads the emulator through internal/ec2 (the one package
// that talks to EC2), configured from the environment as the operator is.
func ec2Client(ctx context.Context) (*ec2.Client, error) {
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_EC2": node.EmulatorURL, "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "e2e", "AWS_SECRET_ACCESS_KEY": "e2e", "AWS_EC2_METADATA_DISABLED": "true",
	} {
		if err := os.Setenv(k, v); err != nil {
			return nil, err
		}
	}
	return ec2.New(ctx, ec2.Config{VPCID: vpcID})
}

// eniTags are the tags of the emulator's ENI holding ip.
func eniTags(ctx context.Context, ip string) (map[string]string, error) {
	client, err := ec2Client(ctx)
	if err != nil {
		return nil, err
	}
	eni, err := client.LookupByIP(ctx, ip)
	if err != nil {
		return nil, err
	}
	return eni.Tags, nil
}

// eniAttachmentID is the ID of ENI id's attachment, "" when detached.
func eniAttachmentID(ctx context.Context, id string) (string, error) {
	client, err := ec2Client(ctx)
	if err != nil {
		return "", err
	}
	eni, err := client.GetENI(ctx, id)
	if err != nil || eni.Attachment == nil {
		return "", err
	}
	return eni.Attachment.ID, nil
}

// taggedPod is a pod of the pause image with the tags annotation.
func taggedPod(name, tags string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
  annotations:
    eni-tagger.io/tags: %q
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
`, name, tags, pauseRef)
}

// nodeENI asks for a second ENI on every node labelled ng=e2e.
const nodeENI = `apiVersion: networking.k8s.aws/v1alpha1
kind: NodeENI
metadata:
  name: e2e-secondary
spec:
  nodeSelector: {ng: e2e}
  subnetID: subnet-0e2e0000000000001
  securityGroupIDs: [sg-0e2e0000000000001]
  deviceIndex: 1
  mtu: 9001
  deleteOnTermination: true
  description: e2e secondary interface
`
