package ec2

import (
	"flag"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/kit/clitest"
)

func TestFlags(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c.BindFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	// No overall ceiling by default (k8s-eni-tagger's was 10/s): each
	// family has AWS's whole bucket. Its burst default stays 20.
	want := Config{Share: 1, QPS: 0, Burst: 20, MaxAttempts: 10, MaxBackoff: 20 * time.Second, BatchIdle: 20 * time.Millisecond, BatchMaxWait: 200 * time.Millisecond}
	if c.Share != want.Share || c.QPS != want.QPS || c.Burst != want.Burst || c.MaxAttempts != want.MaxAttempts || c.MaxBackoff != want.MaxBackoff ||
		c.BatchIdle != want.BatchIdle || c.BatchMaxWait != want.BatchMaxWait || c.VPCID != "" {
		t.Fatalf("defaults %+v, want %+v", c, want)
	}
	if err := fs.Parse([]string{"--aws-rate-limit-qps=4.5", "--aws-rate-limit-burst=7", "--aws-rate-limit-share=0.25", "--vpc-id=vpc-1"}); err != nil {
		t.Fatal(err)
	}
	if c.QPS != 4.5 || c.Burst != 7 || c.Share != 0.25 || c.VPCID != "vpc-1" {
		t.Fatalf("parsed %+v", c)
	}
}

// The values the flags set are checked before anything starts: a bad VPC
// ID, a share outside (0, 1], a negative ceiling, a burst, attempt count
// or delay of zero or less is refused with the flag's name and value,
// instead of New replacing it silently.
func TestValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []func(*Config){
		func(c *Config) { c.Share = 1 },
		func(c *Config) { c.Share = 0.01 },
		func(c *Config) { c.QPS = 0 }, // no ceiling
		func(c *Config) { c.QPS, c.Burst = 10, 20 },
	} {
		c := DefaultConfig()
		ok(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("%+v refused: %v", c, err)
		}
	}
	good := DefaultConfig()
	good.VPCID = "vpc-0123456789abcdef0"
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	good.VPCID = "vpc-89abcdef"
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flag string
		set  func(*Config)
	}{
		{"--vpc-id=banana", func(c *Config) { c.VPCID = "banana" }},
		{"--vpc-id=vpc-1", func(c *Config) { c.VPCID = "vpc-1" }},
		{"--vpc-id=vpc-0123456789ABCDEF0", func(c *Config) { c.VPCID = "vpc-0123456789ABCDEF0" }},
		{"--aws-rate-limit-share=0", func(c *Config) { c.Share = 0 }},
		{"--aws-rate-limit-share=-0.5", func(c *Config) { c.Share = -0.5 }},
		{"--aws-rate-limit-share=1.5", func(c *Config) { c.Share = 1.5 }},
		{"--aws-rate-limit-share=NaN", func(c *Config) { c.Share = math.NaN() }},
		{"--aws-rate-limit-share=+Inf", func(c *Config) { c.Share = math.Inf(1) }},
		{"--aws-rate-limit-qps=-1", func(c *Config) { c.QPS = -1 }},
		{"--aws-rate-limit-qps=NaN", func(c *Config) { c.QPS = math.NaN() }},
		{"--aws-rate-limit-burst=0", func(c *Config) { c.Burst = 0 }},
		{"--aws-max-attempts=0", func(c *Config) { c.MaxAttempts = 0 }},
		{"--aws-max-backoff=-1s", func(c *Config) { c.MaxBackoff = -time.Second }},
		{"--aws-batch-idle=0s", func(c *Config) { c.BatchIdle = 0 }},
		{"--aws-batch-max-wait=0s", func(c *Config) { c.BatchMaxWait = 0 }},
		{"--aws-tag-batch-idle=0s", func(c *Config) { c.TagBatchIdle = 0 }},
		{"--aws-tag-batch-max-wait=-1s", func(c *Config) { c.TagBatchMaxWait = -time.Second }},
	} {
		c := DefaultConfig()
		tc.set(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "invalid "+tc.flag+": ") {
			t.Errorf("%s: %v", tc.flag, err)
			continue
		}
		name, value, _ := strings.Cut(strings.TrimPrefix(tc.flag, "--"), "=")
		clitest.NamesFlagAndValue(t, name, value, err.Error())
	}
}
