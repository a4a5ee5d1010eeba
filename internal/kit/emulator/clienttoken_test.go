package emulator

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// With IgnoreClientToken, as at construction or set at runtime over the
// admin API, two creates with one token make two ENIs (the second with
// other parameters too, no IdempotentParameterMismatch) and echo the
// token; without it, the second answers the first ENI.
func TestIgnoreClientToken(t *testing.T) {
	for _, c := range []struct {
		name     string
		opts     Options
		config   string // admin POST config body, "" for none
		wantENIs int
	}{
		{"default", Options{}, "", 1},
		{"option", Options{IgnoreClientToken: true}, "", 2},
		{"admin on", Options{}, `{"ignoreClientToken":true}`, 2},
		{"admin off", Options{IgnoreClientToken: true}, `{"ignoreClientToken":false}`, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := New(c.opts)
			srv := httptest.NewServer(e)
			defer srv.Close()
			res, err := e.Load(World{VPCs: []VPCSpec{{Name: "v", CIDR: "10.0.0.0/16"}},
				Subnets: []SubnetSpec{{VPC: "v", CIDR: "10.0.0.0/24", AvailabilityZone: "us-east-1a"}}})
			if err != nil {
				t.Fatal(err)
			}
			if c.config != "" {
				post(t, srv.URL+AdminPrefix+"config", "application/json", c.config)
			}
			create := func(desc string) string {
				return post(t, srv.URL+"/", "application/x-www-form-urlencoded", url.Values{"Action": {"CreateNetworkInterface"},
					"Version": {"2016-11-15"}, "SubnetId": {res.Subnets[0]}, "ClientToken": {"tok-1"}, "Description": {desc}}.Encode())
			}
			enis := func() int {
				e.mu.Lock()
				defer e.mu.Unlock()
				return len(e.world.enis)
			}
			for _, body := range []string{create("first"), create("first")} {
				if !strings.Contains(body, "<clientToken>tok-1</clientToken>") {
					t.Errorf("answer without the token echoed: %s", body)
				}
			}
			if got := enis(); got != c.wantENIs {
				t.Fatalf("%d ENIs after two creates with one token, want %d", got, c.wantENIs)
			}
			if c.wantENIs == 2 {
				create("other") // the same token with other parameters: no mismatch
				if got := enis(); got != 3 {
					t.Errorf("%d ENIs after a third create with the token, want 3", got)
				}
			}
		})
	}
}

// post sends body and returns the answer's body, failing the test unless
// it is 200.
func post(t *testing.T, u, contentType, body string) string {
	t.Helper()
	resp, err := http.Post(u, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: HTTP %d: %s", u, resp.StatusCode, b)
	}
	return string(b)
}
