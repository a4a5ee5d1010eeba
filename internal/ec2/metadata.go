package ec2

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

// metadataTimeout bounds each instance metadata query: off EC2 the
// service never answers, and start-up must not hang on it.
const metadataTimeout = 3 * time.Second

func discoverRegion(ctx context.Context, md *imds.Client) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	out, err := md.GetRegion(ctx, &imds.GetRegionInput{})
	if err != nil {
		return "", err
	}
	return out.Region, nil
}

// discoverVPC reads this instance's VPC from the metadata service.
func discoverVPC(ctx context.Context, md *imds.Client) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	mac, err := readMetadata(ctx, md, "mac")
	if err != nil {
		return "", err
	}
	return readMetadata(ctx, md, "network/interfaces/macs/"+mac+"/vpc-id")
}

func readMetadata(ctx context.Context, md *imds.Client, path string) (string, error) {
	out, err := md.GetMetadata(ctx, &imds.GetMetadataInput{Path: path})
	if err != nil {
		return "", err
	}
	defer func() { _ = out.Content.Close() }() // read-only: nothing is lost if closing fails
	var b [256]byte
	n, _ := out.Content.Read(b[:])
	return string(b[:n]), nil
}
