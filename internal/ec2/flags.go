package ec2

import (
	"flag"
	"time"

	"github.com/eni-operator/eni-operator/internal/cli"
)

// DefaultConfig returns the defaults the flags use (k8s-eni-tagger's where
// it had the flag, but for --aws-rate-limit-qps: its 10 requests per
// second, over every call, would hold a NodeENI rollout far below what
// AWS's per-family buckets allow, so by default there is no ceiling over
// the families).
func DefaultConfig() Config {
	return Config{
		Share: 1, QPS: 0, Burst: 20, MaxAttempts: 10, MaxBackoff: 20 * time.Second,
		BatchIdle: 20 * time.Millisecond, BatchMaxWait: 200 * time.Millisecond,
		TagBatchIdle: 200 * time.Millisecond, TagBatchMaxWait: time.Second,
	}
}

// BindFlags registers the EC2 layer's command-line flags on fs, with the
// defaults of DefaultConfig.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	d := DefaultConfig()
	fs.StringVar(&c.VPCID, "vpc-id", "", "VPC that scopes every ENI lookup (vpc- and 8 or 17 hex digits); discovered from instance metadata when empty")
	fs.Float64Var(&c.Share, "aws-rate-limit-share", d.Share, "share of the account's EC2 request buckets this operator may use, in (0, 1]: each action gets the burst and refill rate AWS gives its family (describes, unfiltered describes, tag writes, ENI mutations, other mutations) times this, and each family backs off on its own throttling; lower it when other tools use the same account and region")
	fs.Float64Var(&c.QPS, "aws-rate-limit-qps", d.QPS, "optional overall ceiling of EC2 requests per second over every action family (>= 0; 0: none, each family is bound by its own bucket only)")
	fs.IntVar(&c.Burst, "aws-rate-limit-burst", d.Burst, "burst of the overall ceiling (>= 1); only with --aws-rate-limit-qps")
	fs.IntVar(&c.MaxAttempts, "aws-max-attempts", d.MaxAttempts, "attempts of one EC2 operation (>= 1); only throttling, 5xx and network errors are retried")
	fs.DurationVar(&c.MaxBackoff, "aws-max-backoff", d.MaxBackoff, "longest delay between attempts (> 0)")
	fs.DurationVar(&c.BatchIdle, "aws-batch-idle", d.BatchIdle, "a batched EC2 call goes out after this long without a new request (> 0; lookups by pod IP wait for a pause of at least 100ms)")
	fs.DurationVar(&c.TagBatchIdle, "aws-tag-batch-idle", d.TagBatchIdle, "a batched CreateTags/DeleteTags goes out after this long without a new request (> 0)")
	fs.DurationVar(&c.TagBatchMaxWait, "aws-tag-batch-max-wait", d.TagBatchMaxWait, "longest a tag write waits for others with the same tags (> 0)")
	fs.DurationVar(&c.BatchMaxWait, "aws-batch-max-wait", d.BatchMaxWait, "longest a request waits for others to share its EC2 call (> 0; lookups by pod IP, which come in bursts of new ENIs, wait up to 2.5s while more keep arriving)")
	c.bindHealthFlags(fs)
}

// Validate checks the values the flags set, as the command line gives
// them: a share outside (0, 1], a negative ceiling, a zero or negative
// burst, attempt count or delay is refused
// (New would otherwise replace it silently with the default).
func (c Config) Validate() error {
	var p cli.Problems
	c.check(&p)
	return p.Err()
}

func (c Config) check(p *cli.Problems) {
	p.Check(c.VPCID == "" || cli.AWSID("vpc", c.VPCID), "vpc-id", c.VPCID, cli.AWSIDAllowed("vpc")+", or empty to ask instance metadata")
	p.Check(c.Share > 0 && c.Share <= 1, "aws-rate-limit-share", c.Share, "a fraction in (0, 1], such as 0.5 (the share of the account's EC2 request buckets)")
	p.Check(c.QPS >= 0 && cli.Finite(c.QPS), "aws-rate-limit-qps", c.QPS, "a number >= 0 (EC2 requests per second over every action family; 0: no overall ceiling)")
	p.Check(c.Burst >= 1, "aws-rate-limit-burst", c.Burst, "an integer >= 1")
	p.Check(c.MaxAttempts >= 1, "aws-max-attempts", c.MaxAttempts, "an integer >= 1 (1: no retries)")
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"aws-max-backoff", c.MaxBackoff}, {"aws-batch-idle", c.BatchIdle}, {"aws-batch-max-wait", c.BatchMaxWait},
		{"aws-tag-batch-idle", c.TagBatchIdle}, {"aws-tag-batch-max-wait", c.TagBatchMaxWait},
	} {
		p.Check(d.v > 0, d.name, d.v, "a duration > 0, such as 200ms or 1s")
	}
}
