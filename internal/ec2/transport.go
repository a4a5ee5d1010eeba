package ec2

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// bufferedBodies is the EC2 client's HTTP client: the SDK's (or the
// configured) one, with each request body read into memory first.
//
// Why: smithy-go hands net/http a body whose WriteTo returns io.EOF once
// closed, and closes it as soon as the response headers are in. net/http
// writes such a body straight to the socket and then reads it once more
// to check its length; when the server answers in between, that read
// fails and the transport closes the connection under the response
// being read ("use of closed network connection"), a silent extra call
// with the SDK's retries. An in-memory body is written whole, so the race
// is gone; EC2 Query requests are small forms, the copy costs nothing.
type bufferedBodies struct{ next aws.HTTPClient }

func withBufferedBodies(c aws.HTTPClient) aws.HTTPClient {
	if c == nil {
		c = awshttp.NewBuildableClient()
	}
	return bufferedBodies{next: c}
}

func (b bufferedBodies) Do(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return b.next.Do(r)
	}
	data, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the EC2 request body: %w", err)
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(data))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	r.ContentLength = int64(len(data))
	return b.next.Do(r)
}
