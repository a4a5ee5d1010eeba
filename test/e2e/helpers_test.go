package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
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
	defer os.Remove(f.Name())
	if _, err := f.WriteString(manifest); err != nil {
		t.Fatal(err)
	}
	f.Close()
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

// ec2Client talks to the node's emulator as the operator does.
func ec2Client() *ec2.Client {
	return ec2.NewFromConfig(aws.Config{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(node.EmulatorURL),
		Credentials:  credentials.NewStaticCredentialsProvider("e2e", "e2e", ""),
	})
}

// eniTags are the tags of the emulator's ENI holding ip.
func eniTags(ctx context.Context, ip string) (map[string]string, error) {
	out, err := ec2Client().DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{
		Filters: []ec2types.Filter{{Name: aws.String("addresses.private-ip-address"), Values: []string{ip}}},
	})
	if err != nil {
		return nil, err
	}
	if len(out.NetworkInterfaces) != 1 {
		return nil, fmt.Errorf("%d ENIs hold %s, want 1", len(out.NetworkInterfaces), ip)
	}
	tags := map[string]string{}
	for _, tg := range out.NetworkInterfaces[0].TagSet {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	return tags, nil
}
