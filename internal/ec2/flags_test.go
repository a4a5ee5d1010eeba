package ec2

import (
	"flag"
	"testing"
	"time"
)

func TestFlags(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c.BindFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	want := Config{QPS: 10, Burst: 20, MaxAttempts: 10, MaxBackoff: 20 * time.Second, BatchIdle: 20 * time.Millisecond, BatchMaxWait: 200 * time.Millisecond}
	if c.QPS != want.QPS || c.Burst != want.Burst || c.MaxAttempts != want.MaxAttempts || c.MaxBackoff != want.MaxBackoff ||
		c.BatchIdle != want.BatchIdle || c.BatchMaxWait != want.BatchMaxWait || c.VPCID != "" {
		t.Fatalf("defaults %+v, want %+v (k8s-eni-tagger's --aws-rate-limit-qps 10 and --aws-rate-limit-burst 20)", c, want)
	}
	if err := fs.Parse([]string{"--aws-rate-limit-qps=4.5", "--aws-rate-limit-burst=7", "--vpc-id=vpc-1"}); err != nil {
		t.Fatal(err)
	}
	if c.QPS != 4.5 || c.Burst != 7 || c.VPCID != "vpc-1" {
		t.Fatalf("parsed %+v", c)
	}
}
