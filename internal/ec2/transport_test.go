package ec2

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

type recordingClient struct{ got *http.Request }

func (r *recordingClient) Do(req *http.Request) (*http.Response, error) {
	r.got = req
	return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
}

// A request reaches the transport with its body in memory: a known
// length and a GetBody, so net/http writes it whole and never reads the
// caller's reader after the SDK closed it.
func TestBufferedBodies(t *testing.T) {
	rec := &recordingClient{}
	body := io.NopCloser(strings.NewReader("Action=DescribeVpcs&Version=2016-11-15"))
	req, _ := http.NewRequest(http.MethodPost, "http://ec2.example", body)
	req.ContentLength = -1
	if _, err := withBufferedBodies(rec).Do(req); err != nil {
		t.Fatal(err)
	}
	if rec.got.ContentLength != 38 || rec.got.GetBody == nil {
		t.Fatalf("ContentLength %d, GetBody set %v", rec.got.ContentLength, rec.got.GetBody != nil)
	}
	for range 2 {
		b, _ := rec.got.GetBody()
		if data, _ := io.ReadAll(b); string(data) != "Action=DescribeVpcs&Version=2016-11-15" {
			t.Fatalf("body %q", data)
		}
	}
	if data, _ := io.ReadAll(rec.got.Body); len(data) != 38 {
		t.Fatalf("body %q", data)
	}
}
