package ec2

import (
	"flag"
	"time"
)

// BindFlags registers the EC2 layer's command-line flags on fs, with the
// defaults of k8s-eni-tagger where it had the flag.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.VPCID, "vpc-id", "", "VPC that scopes every ENI lookup; discovered from instance metadata when empty")
	fs.Float64Var(&c.QPS, "aws-rate-limit-qps", 10, "ceiling of EC2 requests per second; the rate drops on throttling and recovers")
	fs.IntVar(&c.Burst, "aws-rate-limit-burst", 20, "EC2 requests allowed in a burst above the rate")
	fs.IntVar(&c.MaxAttempts, "aws-max-attempts", 10, "attempts of one EC2 operation; only throttling, 5xx and network errors are retried")
	fs.DurationVar(&c.MaxBackoff, "aws-max-backoff", 20*time.Second, "longest delay between attempts")
	fs.DurationVar(&c.BatchIdle, "aws-batch-idle", 20*time.Millisecond, "a batched EC2 call goes out after this long without a new request")
	fs.DurationVar(&c.TagBatchIdle, "aws-tag-batch-idle", 200*time.Millisecond, "a batched CreateTags/DeleteTags goes out after this long without a new request")
	fs.DurationVar(&c.TagBatchMaxWait, "aws-tag-batch-max-wait", time.Second, "longest a tag write waits for others with the same tags")
	fs.DurationVar(&c.BatchMaxWait, "aws-batch-max-wait", 200*time.Millisecond, "longest a request waits for others to share its EC2 call")
	c.bindHealthFlags(fs)
}
