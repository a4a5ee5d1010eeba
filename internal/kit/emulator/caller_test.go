package emulator

import (
	"net/http/httptest"
	"testing"
)

func TestAccessKeyID(t *testing.T) {
	for _, tc := range []struct{ header, want string }{
		{"AWS4-HMAC-SHA256 Credential=replica-a/20260101/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=00", "replica-a"},
		{"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE", "AKIDEXAMPLE"},
		{"", ""},
		{"Bearer token", ""},
	} {
		r := httptest.NewRequest("POST", "/", nil)
		r.Header.Set("Authorization", tc.header)
		if got := accessKeyID(r); got != tc.want {
			t.Errorf("accessKeyID(%q) = %q, want %q", tc.header, got, tc.want)
		}
	}
}
