package ec2

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// placeholder IDs for DryRun checks: EC2 checks permissions before it
// looks the resources up, so they need not exist.
const (
	dryRunENI    = "eni-00000000000000000"
	dryRunSubnet = "subnet-00000000000000000"
	dryRunAttach = "eni-attach-00000000000000000"
	dryRunInst   = "i-00000000000000000"
)

// PermissionOption shapes the DryRun requests of CheckPermissions.
type PermissionOption func(*permissionRequests)

type permissionRequests struct {
	createTags map[string]string
}

// WithCreateTags makes the CreateNetworkInterface check carry these tags
// (TagSpecifications), as the real creates do: a policy that allows
// creating only ENIs tagged for the cluster (aws:RequestTag) refuses an
// untagged DryRun although the real calls are allowed.
func WithCreateTags(tags map[string]string) PermissionOption {
	return func(r *permissionRequests) { r.createTags = tags }
}

// dryRun makes the DryRun call that checks one IAM action.
func (c *Client) dryRun(ctx context.Context, action string, req permissionRequests) error {
	dry := aws.Bool(true)
	var err error
	switch action {
	case "ec2:DescribeNetworkInterfaces":
		_, err = c.api.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{DryRun: dry, MaxResults: aws.Int32(5)})
	case "ec2:DescribeInstances":
		_, err = c.api.DescribeInstances(ctx, &ec2.DescribeInstancesInput{DryRun: dry, MaxResults: aws.Int32(5)})
	case "ec2:DescribeSubnets":
		_, err = c.api.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{DryRun: dry})
	case "ec2:DescribeSecurityGroups":
		_, err = c.api.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{DryRun: dry, MaxResults: aws.Int32(5)})
	case "ec2:DescribeInstanceTypes":
		_, err = c.api.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{DryRun: dry})
	case "ec2:CreateTags":
		_, err = c.api.CreateTags(ctx, &ec2.CreateTagsInput{DryRun: dry, Resources: []string{dryRunENI},
			Tags: []types.Tag{{Key: aws.String("eni-operator/permission-check"), Value: aws.String("")}}})
	case "ec2:DeleteTags":
		_, err = c.api.DeleteTags(ctx, &ec2.DeleteTagsInput{DryRun: dry, Resources: []string{dryRunENI},
			Tags: []types.Tag{{Key: aws.String("eni-operator/permission-check")}}})
	case "ec2:CreateNetworkInterface":
		in := &ec2.CreateNetworkInterfaceInput{DryRun: dry, SubnetId: aws.String(dryRunSubnet)}
		if len(req.createTags) > 0 {
			in.TagSpecifications = []types.TagSpecification{{ResourceType: types.ResourceTypeNetworkInterface, Tags: sdkTags(req.createTags)}}
		}
		_, err = c.api.CreateNetworkInterface(ctx, in)
	case "ec2:DeleteNetworkInterface":
		_, err = c.api.DeleteNetworkInterface(ctx, &ec2.DeleteNetworkInterfaceInput{DryRun: dry, NetworkInterfaceId: aws.String(dryRunENI)})
	case "ec2:AttachNetworkInterface":
		_, err = c.api.AttachNetworkInterface(ctx, &ec2.AttachNetworkInterfaceInput{DryRun: dry,
			NetworkInterfaceId: aws.String(dryRunENI), InstanceId: aws.String(dryRunInst), DeviceIndex: aws.Int32(1)})
	case "ec2:DetachNetworkInterface":
		_, err = c.api.DetachNetworkInterface(ctx, &ec2.DetachNetworkInterfaceInput{DryRun: dry, AttachmentId: aws.String(dryRunAttach)})
	case "ec2:ModifyNetworkInterfaceAttribute":
		_, err = c.api.ModifyNetworkInterfaceAttribute(ctx, &ec2.ModifyNetworkInterfaceAttributeInput{DryRun: dry,
			NetworkInterfaceId: aws.String(dryRunENI), Description: &types.AttributeValue{Value: aws.String("")}})
	default:
		return fmt.Errorf("no permission check for %s", action)
	}
	return err
}

// CheckPermissions verifies with EC2 DryRun calls that the credentials
// allow each IAM action (e.g. "ec2:CreateTags"). The error names every
// missing action, so the fix is one IAM policy edit.
func (c *Client) CheckPermissions(ctx context.Context, actions []string, opts ...PermissionOption) error {
	var req permissionRequests
	for _, o := range opts {
		o(&req)
	}
	var missing, failed []string
	for _, a := range actions {
		err := c.dryRun(ctx, a, req)
		switch {
		case Code(err) == "DryRunOperation":
		case IsUnauthorized(err):
			missing = append(missing, a)
		default:
			failed = append(failed, fmt.Sprintf("%s: %v", a, err))
		}
	}
	if len(missing) == 0 && len(failed) == 0 {
		return nil
	}
	return &PermissionError{Missing: missing, Failed: failed}
}

// PermissionError is CheckPermissions' answer when an action is not
// allowed or could not be checked.
type PermissionError struct {
	// Missing are the IAM actions the credentials lack.
	Missing []string
	// Failed are checks that could not run, with their errors.
	Failed []string
}

func (e *PermissionError) Error() string {
	var parts []string
	if len(e.Missing) > 0 {
		parts = append(parts, fmt.Sprintf("the AWS credentials lack IAM permission for %s; add them to the operator's IAM policy (docs/iam.md)",
			strings.Join(e.Missing, ", ")))
	}
	if len(e.Failed) > 0 {
		parts = append(parts, fmt.Sprintf("permission checks could not run: %s", strings.Join(e.Failed, "; ")))
	}
	return strings.Join(parts, "\n")
}

// MissingActions returns the IAM actions a CheckPermissions error names as
// missing, or nil.
func MissingActions(err error) []string {
	var pe *PermissionError
	if errors.As(err, &pe) {
		return pe.Missing
	}
	return nil
}
