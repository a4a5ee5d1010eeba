package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/kit/testenv/operatorenv"
)

// webIdentity is IRSA as the operator meets it: a projected token file
// the kubelet rotates, a role, and STS (the emulator's) turning the token
// into credentials that expire.
type webIdentity struct {
	t    *testing.T
	emu  *emulator.Emulator
	dir  string
	file string
	n    int
}

const credentialLifetime = 3 * time.Second

func newWebIdentity(t *testing.T, e *testenv.EC2) *webIdentity {
	dir := t.TempDir()
	wi := &webIdentity{t: t, emu: e.Emulator, dir: dir, file: filepath.Join(dir, "token")}
	wi.rotate()
	for k, v := range map[string]string{
		"AWS_WEB_IDENTITY_TOKEN_FILE": wi.file, "AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/eni-operator",
		"AWS_ROLE_SESSION_NAME": "eni-operator", "AWS_ENDPOINT_URL_STS": e.URL, "AWS_ENDPOINT_URL_EC2": e.URL,
		"AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
	} {
		t.Setenv(k, v)
	}
	return wi
}

// rotate writes the next token over the file, as the kubelet does, and
// makes STS accept only it and the one before (still unexpired).
func (wi *webIdentity) rotate() {
	wi.n++
	tmp := filepath.Join(wi.dir, ".token.tmp")
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("token-%d", wi.n)), 0o600); err != nil {
		wi.t.Fatal(err)
	}
	if err := os.Rename(tmp, wi.file); err != nil {
		wi.t.Fatal(err)
	}
	tokens := []string{fmt.Sprintf("token-%d", wi.n), fmt.Sprintf("token-%d", wi.n-1)}
	if err := wi.emu.Configure(emulator.Config{Auth: &emulator.Auth{Require: true,
		Lifetime: emulator.Duration{Duration: credentialLifetime}, Tokens: tokens}}); err != nil {
		wi.t.Fatal(err)
	}
}

// The whole operator, as the binary builds it, takes its credentials from
// the SDK's standard chain with a web-identity token file; EC2 accepts
// only unexpired credentials of its STS. The token is rotated and the
// credentials expire (3s here, time shrunk: AWS's live at least 15
// minutes) while pods come and go: the operator keeps tagging without a
// restart, and EC2 never refuses one of its calls.
func TestOperatorCredentialsRotate(t *testing.T) {
	e := testenv.NewEC2(t, emulator.Options{DetachDelay: 50 * time.Millisecond}, testenv.DefaultWorld(
		testenv.OnlySubnets("nodes-a", "multus-a", "pods"), testenv.WithNodes(1, "m5.xlarge"), testenv.WithENIs(testenv.BranchENIs(8, nil))))
	cl := operatorenv.NewOneNode(t, "creds", e.World.Instances[0].ID)
	wi := newWebIdentity(t, e)
	operatorenv.Run(t, cl.Env.Config, cl.Config(e.VPC))

	// A pod every second for 8s, a token rotation every 2s: credentials
	// expire several times while there is work.
	start := time.Now()
	for i, n := range e.World.NetworkInterfaces {
		cl.Pod(t, fmt.Sprintf("p-%d", i), n.PrivateIP, fmt.Sprintf("app=a%d", i))
		if i%2 == 1 {
			wi.rotate()
		}
		time.Sleep(time.Second)
	}
	reader, err := ec2.New(context.Background(), ec2.Config{VPCID: e.VPC})
	if err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyEvery(t, "every pod's ENI tagged", time.Minute, 500*time.Millisecond, func() (bool, string) {
		enis, err := reader.ListENIs(context.Background())
		if err != nil {
			return false, err.Error()
		}
		tags := map[string]map[string]string{}
		for _, x := range enis {
			tags[x.ID] = x.Tags
		}
		missing := 0
		for i, n := range e.World.NetworkInterfaces {
			if tags[n.ID]["app"] != fmt.Sprintf("a%d", i) {
				missing++
			}
		}
		return missing == 0, fmt.Sprintf("%d of %d pods' ENIs untagged", missing, len(e.World.NetworkInterfaces))
	})
	counts := e.Emulator.Counts()
	refused := 0
	for action, c := range counts {
		if n := c.Errors["AuthFailure"]; n > 0 {
			refused += n
			t.Errorf("%d %s calls refused AuthFailure: the operator used expired or unknown credentials", n, action)
		}
	}
	sts := counts["AssumeRoleWithWebIdentity"]
	t.Logf("%v with %v credentials and %d token rotations: %d AssumeRoleWithWebIdentity (%v refused), %d EC2 calls refused",
		time.Since(start).Round(time.Second), credentialLifetime, wi.n-1, sts.Calls, sts.Errors, refused)
	if sts.Calls < 3 {
		t.Errorf("%d AssumeRoleWithWebIdentity calls: the credentials were not renewed as they expired", sts.Calls)
	}
}
