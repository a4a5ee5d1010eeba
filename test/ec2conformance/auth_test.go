package ec2conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// The emulator's minimal STS issues temporary credentials for a
// web-identity token (what IRSA's token file leads the SDK to); with
// credentials required, EC2 accepts those until they expire and refuses
// any others with AuthFailure. A token STS does not accept is refused
// InvalidIdentityToken.
func TestEmulatorWebIdentityCredentials(t *testing.T) {
	tg := isolated(t)
	lifetime := time.Second
	configure(t, tg, emulator.Config{Auth: &emulator.Auth{Require: true, Lifetime: emulator.Duration{Duration: lifetime}, Tokens: []string{"good"}}})
	stsc := sts.NewFromConfig(aws.Config{Region: tg.region, BaseEndpoint: aws.String(tg.endpoint), HTTPClient: tg.http,
		Retryer: func() aws.Retryer { return aws.NopRetryer{} }})
	assume := func(token string) (*sts.AssumeRoleWithWebIdentityOutput, error) {
		return stsc.AssumeRoleWithWebIdentity(t.Context(), &sts.AssumeRoleWithWebIdentityInput{
			RoleArn: aws.String("arn:aws:iam::123456789012:role/test"), RoleSessionName: aws.String("test"), WebIdentityToken: aws.String(token)})
	}
	_, err := assume("bad")
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "InvalidIdentityToken" {
		t.Fatalf("a token STS does not accept: %v, want InvalidIdentityToken", err)
	}
	out, err := assume("good")
	noErr(t, err, "AssumeRoleWithWebIdentity")
	cr := out.Credentials
	if cr == nil || aws.ToString(cr.AccessKeyId) == "" || cr.Expiration == nil || time.Until(*cr.Expiration) > lifetime+time.Second {
		t.Fatalf("credentials %+v, want a key expiring within %v", cr, lifetime)
	}
	withCreds := func(id, secret, session string) *ec2.Client {
		return ec2.NewFromConfig(aws.Config{Region: tg.region, BaseEndpoint: aws.String(tg.endpoint), HTTPClient: tg.http,
			Credentials: credentials.NewStaticCredentialsProvider(id, secret, session), Retryer: func() aws.Retryer { return aws.NopRetryer{} }})
	}
	issued := withCreds(aws.ToString(cr.AccessKeyId), aws.ToString(cr.SecretAccessKey), aws.ToString(cr.SessionToken))
	_, err = issued.DescribeNetworkInterfaces(t.Context(), &ec2.DescribeNetworkInterfacesInput{})
	noErr(t, err, "EC2 with the issued credentials")
	_, err = withCreds("AKIDOTHER", "secret", "").DescribeNetworkInterfaces(t.Context(), &ec2.DescribeNetworkInterfacesInput{})
	requireAPIError(t, err, "AuthFailure", 403)
	time.Sleep(time.Until(*cr.Expiration) + 100*time.Millisecond)
	_, err = issued.DescribeNetworkInterfaces(t.Context(), &ec2.DescribeNetworkInterfacesInput{})
	requireAPIError(t, err, "AuthFailure", 403)
}

// Down makes EC2 unreachable: a call gets no answer at all (its
// connection is closed), not an EC2 error; back up, calls are answered.
func TestEmulatorDown(t *testing.T) {
	tg := isolated(t)
	c := tg.client()
	down := true
	configure(t, tg, emulator.Config{Down: &down})
	_, err := c.DescribeNetworkInterfaces(t.Context(), &ec2.DescribeNetworkInterfacesInput{})
	var api smithy.APIError
	if err == nil || errors.As(err, &api) {
		t.Fatalf("a call while down: %v, want a connection failure without an EC2 answer", err)
	}
	down = false
	configure(t, tg, emulator.Config{Down: &down})
	_, err = c.DescribeNetworkInterfaces(t.Context(), &ec2.DescribeNetworkInterfacesInput{})
	noErr(t, err, "a call once EC2 is back")
}
