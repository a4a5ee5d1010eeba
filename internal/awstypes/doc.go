// Package awstypes holds the operator's plain values for EC2 resources:
// ENIs, their attachments, what creating one asks for, subnets, security
// groups and an instance type's network limits. It imports no SDK and does no I/O, so the
// packages that decide (a NodeENI's plan, the trust check) can take them
// as arguments; internal/ec2 converts the SDK's types to and from them.
package awstypes
