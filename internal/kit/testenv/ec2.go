package testenv

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// EC2 is a test's EC2: an emulator served over HTTP with a world loaded.
type EC2 struct {
	Emulator *emulator.Emulator
	// URL is the endpoint.
	URL string
	// VPC is the ID of the world's first VPC.
	VPC string
	// World is what loading the world returned.
	World emulator.LoadResult
	// Subnets and Groups map the names of the world's subnets and of the
	// first VPC's security groups to their IDs.
	Subnets, Groups map[string]string
}

// NewEC2 serves an emulator for the test's lifetime, loads w into it and
// zeroes its call counts (a test counts its own calls).
func NewEC2(t testing.TB, o emulator.Options, w emulator.World) *EC2 {
	t.Helper()
	emu, endpoint := Serve(t, o)
	e := &EC2{Emulator: emu, URL: endpoint, Subnets: map[string]string{}, Groups: map[string]string{}}
	e.World = e.Load(t, w)
	if len(e.World.VPCs) > 0 {
		e.VPC = e.World.VPCs[0]
	}
	for i, s := range w.Subnets {
		e.Subnets[s.Name] = e.World.Subnets[i]
	}
	for i, g := range w.SecurityGroups {
		if len(w.VPCs) > 0 && g.VPC == w.VPCs[0].Name {
			e.Groups[g.Name] = e.World.SecurityGroups[i]
		}
	}
	emu.ResetCounts()
	return e
}

// Load adds more to the emulator's world.
func (e *EC2) Load(t testing.TB, w emulator.World) emulator.LoadResult {
	t.Helper()
	res, err := e.Emulator.Load(w)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Client is an EC2 client of the endpoint configured by cfg, in the
// world's first VPC unless cfg names one.
func (e *EC2) Client(cfg ec2.Config) *ec2.Client {
	if cfg.VPCID == "" {
		cfg.VPCID = e.VPC
	}
	return EC2Client(e.URL, cfg)
}

// Calls returns the emulator's calls per action since the last reset.
func (e *EC2) Calls() map[string]int {
	out := map[string]int{}
	for a, c := range e.Emulator.Counts() {
		out[a] = c.Calls
	}
	return out
}

// TotalCalls is the sum of Calls.
func (e *EC2) TotalCalls() int {
	n := 0
	for _, c := range e.Calls() {
		n += c
	}
	return n
}

// ENI reads an ENI with a client of the test's own (a call the emulator
// counts).
func (e *EC2) ENI(t testing.TB, id string) awstypes.ENI {
	t.Helper()
	eni, err := e.Client(ec2.Config{QPS: 1000, Burst: 1000}).GetENI(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return eni
}

// Serve starts an emulator over HTTP for the test's lifetime and returns
// it with its endpoint.
func Serve(t testing.TB, o emulator.Options) (*emulator.Emulator, string) {
	t.Helper()
	emu := emulator.New(o)
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	return emu, srv.URL
}

// EC2Client returns an EC2 client for endpoint with static test
// credentials, configured by cfg.
func EC2Client(endpoint string, cfg ec2.Config) *ec2.Client {
	return ec2.NewFromAWSConfig(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(endpoint),
	}, cfg)
}

// AWSEnv points an AWS SDK at endpoint the standard way
// (AWS_ENDPOINT_URL_EC2, region, static test credentials, no instance
// metadata), as a process started with it would find EC2.
func AWSEnv(endpoint string) map[string]string {
	return map[string]string{"AWS_ENDPOINT_URL_EC2": endpoint, "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_EC2_METADATA_DISABLED": "true"}
}

// FastEC2Config is an operator's EC2 client configuration for tests: its
// buckets far beyond AWS's, so tests do not wait for tokens (the
// emulator enforces AWS's buckets only when its throttling is on), two
// attempts with short back-off, and batches that close within 20 ms.
func FastEC2Config(vpc string) ec2.Config {
	c := ec2.Config{VPCID: vpc, Buckets: map[ec2.Family]ec2.Bucket{}, MaxAttempts: 2, MaxBackoff: 20 * time.Millisecond,
		BatchIdle: 5 * time.Millisecond, BatchMaxWait: 20 * time.Millisecond}
	for _, f := range ec2.Families() {
		c.Buckets[f] = ec2.Bucket{Burst: 100000, Refill: 100000}
	}
	return c
}
