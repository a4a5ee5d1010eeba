package ec2

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// IRSA: credentials come from the SDK's standard chain, a web-identity
// token file and a role (AssumeRoleWithWebIdentity at the emulator's
// STS), and expire. The token file is rotated, and the previous token
// refused soon after, as the kubelet and the token's expiry do, while the
// client keeps calling EC2, which accepts only unexpired credentials its
// STS issued. The client keeps working without a restart: it fetches new
// credentials with the current token before the old ones expire. Time is
// shrunk: credentials live 2s (AWS: at least 15 minutes).
func TestCredentialsRotateWhileRunning(t *testing.T) {
	emu := emulator.New(emulator.Options{})
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	res, err := emu.Load(emulator.World{VPCs: []emulator.VPCSpec{{Name: "main", CIDR: "10.0.0.0/16"}},
		Subnets:           []emulator.SubnetSpec{{Name: "a", VPC: "main", CIDR: "10.0.0.0/18", AvailabilityZone: "us-east-1a"}},
		NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	rotate := func(n int) {
		// As the kubelet does: a new file renamed over the old.
		tmp := filepath.Join(dir, ".token.tmp")
		if err := os.WriteFile(tmp, []byte(fmt.Sprintf("token-%d", n)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, tokenFile); err != nil {
			t.Fatal(err)
		}
		tokens := []string{fmt.Sprintf("token-%d", n)}
		if n > 1 {
			tokens = append(tokens, fmt.Sprintf("token-%d", n-1)) // until the old one expires
		}
		if err := emu.Configure(emulator.Config{Auth: &emulator.Auth{Require: true, Lifetime: emulator.Duration{Duration: 2 * time.Second}, Tokens: tokens}}); err != nil {
			t.Fatal(err)
		}
	}
	rotate(1)
	for k, v := range map[string]string{
		"AWS_WEB_IDENTITY_TOKEN_FILE": tokenFile, "AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/eni-operator",
		"AWS_ROLE_SESSION_NAME": "eni-operator", "AWS_ENDPOINT_URL_STS": srv.URL, "AWS_ENDPOINT_URL_EC2": srv.URL,
		"AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
	} {
		t.Setenv(k, v)
	}
	ctx := context.Background()
	c, err := New(ctx, Config{VPCID: res.VPCs[0]})
	if err != nil {
		t.Fatal(err)
	}
	eni := res.NetworkInterfaces[0].ID
	const rotations = 3
	deadline := time.Now().Add(rotations * 3 * time.Second)
	calls, next := 0, 2
	for rotated := time.Now(); time.Now().Before(deadline); calls++ {
		if _, err := c.GetENI(ctx, eni); err != nil {
			t.Fatalf("call %d failed: %v", calls, err)
		}
		if time.Since(rotated) > 3*time.Second {
			rotate(next)
			next, rotated = next+1, time.Now()
		}
		time.Sleep(100 * time.Millisecond)
	}
	counts := emu.Counts()
	sts := counts["AssumeRoleWithWebIdentity"]
	t.Logf("%d EC2 calls over %d token rotations with 2s credentials: %d AssumeRoleWithWebIdentity (%v refused), EC2 errors %v",
		calls, next-2, sts.Calls, sts.Errors, counts["DescribeNetworkInterfaces"].Errors)
	if want := rotations*3/2 - 1; sts.Calls < want {
		t.Errorf("%d AssumeRoleWithWebIdentity calls in %ds of 2s credentials, want at least %d: the credentials were not renewed",
			sts.Calls, rotations*3, want)
	}
	if n := counts["DescribeNetworkInterfaces"].Errors["AuthFailure"]; n != 0 {
		t.Errorf("%d EC2 calls were refused AuthFailure: expired or unknown credentials were used", n)
	}
}
