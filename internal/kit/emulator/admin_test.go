package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// configSets is what Configure may replace wholesale.
type configSets struct {
	faults, buckets, denied []string
	throttling              bool
}

func (e *Emulator) configSets() configSets {
	e.cfgMu.Lock()
	defer e.cfgMu.Unlock()
	var s configSets
	for k := range e.cfg.faults {
		s.faults = append(s.faults, k)
	}
	for k := range e.cfg.buckets {
		s.buckets = append(s.buckets, k)
	}
	for k := range e.cfg.denied {
		s.denied = append(s.denied, k)
	}
	slices.Sort(s.faults)
	slices.Sort(s.buckets)
	slices.Sort(s.denied)
	s.throttling = e.cfg.throttling
	return s
}

func (s configSets) equal(o configSets) bool {
	return slices.Equal(s.faults, o.faults) && slices.Equal(s.buckets, o.buckets) &&
		slices.Equal(s.denied, o.denied) && s.throttling == o.throttling
}

// Over the admin API, nil (absent or null) Faults, Buckets and Denied
// leave the current set alone, and empty ones clear it.
func TestAdminConfigureClearsSets(t *testing.T) {
	e := New(Options{})
	srv := httptest.NewServer(e)
	defer srv.Close()
	admin := NewAdminClient(srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	ec2Call := func(action string) int {
		t.Helper()
		resp, err := http.PostForm(srv.URL+"/", url.Values{"Action": {action}, "Version": {"2016-11-15"}})
		if err != nil {
			t.Fatalf("%s: %v", action, err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	step := func(what string, c Config, want configSets) {
		t.Helper()
		if err := admin.Configure(ctx, c); err != nil {
			t.Fatalf("%s: Configure: %v", what, err)
		}
		if got := e.configSets(); !got.equal(want) {
			t.Fatalf("%s: configuration %+v, want %+v", what, got, want)
		}
	}
	raw := func(what, body string, want configSets) {
		t.Helper()
		resp, err := http.Post(srv.URL+AdminPrefix+"config", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: HTTP %d", what, resp.StatusCode)
		}
		if got := e.configSets(); !got.equal(want) {
			t.Fatalf("%s: configuration %+v, want %+v", what, got, want)
		}
	}

	full := configSets{faults: []string{"DescribeSubnets"}, buckets: []string{"DescribeVpcs"}, denied: []string{"DescribeVpcs"}}
	step("set all three", Config{
		Faults:  map[string]Fault{"DescribeSubnets": {ErrorRate: 1}},
		Buckets: map[string]Bucket{"DescribeVpcs": {Size: 1, Refill: 1}},
		Denied:  []string{"DescribeVpcs"},
	}, full)
	if got := ec2Call("DescribeVpcs"); got != http.StatusForbidden {
		t.Fatalf("denied DescribeVpcs answered HTTP %d, want 403", got)
	}
	on := true
	full.throttling = true
	step("nil sets are left alone", Config{Throttling: &on}, full)
	raw("absent sets are left alone", `{}`, full)
	raw("null sets are left alone", `{"faults":null,"buckets":null,"denied":null}`, full)

	cleared := full
	cleared.denied = nil
	step("an empty Denied clears it", Config{Denied: []string{}}, cleared)
	if got := ec2Call("DescribeVpcs"); got != http.StatusOK {
		t.Fatalf("DescribeVpcs after clearing the denied list answered HTTP %d, want 200", got)
	}
	cleared.faults, cleared.buckets = nil, nil
	step("empty Faults and Buckets clear them", Config{Faults: map[string]Fault{}, Buckets: map[string]Bucket{}}, cleared)
	if got := ec2Call("DescribeSubnets"); got != http.StatusOK {
		t.Fatalf("DescribeSubnets after clearing the faults answered HTTP %d, want 200", got)
	}

	raw("set again as JSON", `{"faults":{"DescribeSubnets":{"errorRate":1}},"buckets":{"DescribeVpcs":{"size":1,"refill":1}},"denied":["DescribeVpcs"]}`, full)
	raw("clear as JSON", `{"faults":{},"buckets":{},"denied":[]}`, cleared)
}

// Config encodes nil sets as null and empty ones as {} and [], so the
// server can tell them apart.
func TestConfigJSON(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, `{"faults":null,"buckets":null,"denied":null}`},
		{Config{Faults: map[string]Fault{}, Buckets: map[string]Bucket{}, Denied: []string{}}, `{"faults":{},"buckets":{},"denied":[]}`},
	} {
		b, err := json.Marshal(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, []byte(c.want)) {
			t.Errorf("%+v encodes as %s, want %s", c.cfg, b, c.want)
		}
		var back Config
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if (back.Faults == nil) != (c.cfg.Faults == nil) || (back.Buckets == nil) != (c.cfg.Buckets == nil) ||
			(back.Denied == nil) != (c.cfg.Denied == nil) {
			t.Errorf("%s decodes as %+v, want %+v", b, back, c.cfg)
		}
	}
}
