// Package ec2conformance is the executable specification of the EC2
// behaviour the operator relies on: ENI filters and pagination, tags,
// ClientToken idempotency, attach/detach, instance lifecycle, error codes
// and DryRun. Every check goes through aws-sdk-go-v2 only, so the same
// suite runs against the in-process emulator, a separately started
// ec2-emulator or any EC2 endpoint.
//
// Run it with
//
//	make conformance                                      # in-process emulator
//	EC2_ENDPOINT=http://127.0.0.1:PORT make conformance   # a running endpoint
//
// or `go test -count=1 ./test/ec2conformance/`.
//
// Without EC2_ENDPOINT, TestMain starts an emulator (internal/kit/emulator)
// behind httptest. With EC2_ENDPOINT the suite builds every test's world
// through the standard EC2 API (CreateVpc, CreateSubnet,
// CreateSecurityGroup, RunInstances, CreateNetworkInterface) and cleans up
// what it can (instances are terminated, ENIs deleted; VPCs, subnets and
// groups stay, as the emulator has no Delete actions for them).
//
// Tests of emulator-only features (the admin API under /_emulator/:
// denied actions, throttling buckets, fault injection, call counts, world
// loading) skip themselves when GET /_emulator/healthz does not answer. In
// in-process mode each of those tests gets its own emulator; against an
// external emulator they run serially and put throttling, faults, buckets
// and denied actions back to their defaults afterwards.
//
// Behaviours the emulator does not model are listed in docs/emulator.md,
// not checked here: every check in the suite passes against both.
//
// Other environment variables:
//
//	EC2_REGION (or AWS_REGION)  region of the endpoint, default us-east-1;
//	                            worlds use its zones "a" and "b"
//	EC2_IMAGE_ID                AMI for RunInstances, default ami-0123456789abcdef0
//	AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN
//	                            credentials for an external endpoint that checks
//	                            them (the emulator accepts any)
package ec2conformance
