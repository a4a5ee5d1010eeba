// Package ec2test points the operator's EC2 client at an emulator started
// for a test, the way every integration test needs it.
package ec2test

import (
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/emulator"
)

// Serve starts an emulator over HTTP for the test's lifetime and returns
// it with its endpoint.
func Serve(t testing.TB, o emulator.Options) (*emulator.Emulator, string) {
	t.Helper()
	emu := emulator.New(o)
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	return emu, srv.URL
}

// Client returns an EC2 client for endpoint with static test
// credentials, configured by cfg.
func Client(endpoint string, cfg ec2.Config) *ec2.Client {
	return ec2.NewFromAWSConfig(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(endpoint),
	}, cfg)
}
