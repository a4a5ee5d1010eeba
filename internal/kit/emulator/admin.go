package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// AdminPrefix is the path under which the admin API is served. The EC2
// Query API only ever uses "/", so the two never collide.
const AdminPrefix = "/_emulator/"

// byName finds a resource ID by Name tag (security groups: GroupName).
// Among several with one name, the oldest wins.
func (w *world) byName(name string) (string, bool) {
	var best *resource
	consider := func(r *resource, named bool) {
		if named && (best == nil || r.seq < best.seq) {
			best = r
		}
	}
	for _, v := range w.vpcs {
		consider(&v.resource, v.tags["Name"] == name)
	}
	for _, s := range w.subnets {
		consider(&s.resource, s.tags["Name"] == name)
	}
	for _, g := range w.groups {
		consider(&g.resource, g.name == name || g.tags["Name"] == name)
	}
	for _, i := range w.instances {
		consider(&i.resource, i.tags["Name"] == name)
	}
	if best == nil {
		return "", false
	}
	return best.id, true
}

func (w *world) seedSecondary(n *eni, explicit []string, count int) *apiError {
	s := w.subnets[n.subnetID]
	for _, ip := range explicit {
		a, err := netip.ParseAddr(ip)
		if err != nil || !s.cidr.Contains(a) {
			return apiErr("InvalidParameterValue", "Address %s does not fall within subnet %s", ip, s.id)
		}
		if _, used := w.owner(n.vpcID, a); used {
			return apiErr("InvalidIPAddress.InUse", "The specified address %s is already in use.", ip)
		}
		n.secondaryIPs = append(n.secondaryIPs, a)
		w.claim(n, a)
	}
	return w.addSecondary(n, count)
}

func addrStrings(list []netip.Addr) []string {
	if len(list) == 0 {
		return nil
	}
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = a.String()
	}
	return out
}

func (e *Emulator) serveAdmin(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, AdminPrefix)
	reply := func(v any, err error) {
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		if v == nil {
			v = map[string]string{"status": "ok"}
		}
		_ = json.NewEncoder(w).Encode(v)
	}
	decode := func(into any) error {
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(into); err != nil {
			return fmt.Errorf("cannot read the request body: %w", err)
		}
		return nil
	}
	// A method never holds a space, so the key names one endpoint.
	switch r.Method + " " + path {
	case "GET healthz":
		reply(nil, nil)
	case "GET counts":
		reply(e.Counts(), nil)
	case "POST counts/reset":
		e.ResetCounts()
		reply(nil, nil)
	case "GET calls":
		reply(e.Calls(), nil)
	case "POST config":
		var c Config
		if err := decode(&c); err != nil {
			reply(nil, err)
			return
		}
		reply(nil, e.Configure(c))
	case "POST world":
		var wd World
		if err := decode(&wd); err != nil {
			reply(nil, err)
			return
		}
		res, err := e.Load(wd)
		reply(res, err)
	case "POST reset":
		e.Reset()
		reply(nil, nil)
	default:
		w.WriteHeader(http.StatusNotFound)
		reply(nil, fmt.Errorf("no admin endpoint %s %s; see GET/POST under %s: healthz, counts, counts/reset, calls, config, world, reset",
			r.Method, r.URL.Path, AdminPrefix))
	}
}

// AdminClient talks to an emulator's admin API over HTTP.
type AdminClient struct {
	endpoint string
	http     *http.Client
}

// NewAdminClient returns a client for the emulator at endpoint
// (e.g. http://127.0.0.1:4566).
func NewAdminClient(endpoint string) *AdminClient {
	return &AdminClient{endpoint: strings.TrimSuffix(endpoint, "/"), http: &http.Client{Timeout: 2 * time.Minute}}
}

func (c *AdminClient) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.endpoint+AdminPrefix+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }() // read to the end below; nothing to report
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return fmt.Errorf("emulator admin %s %s: %s", method, path, e.Error)
		}
		return fmt.Errorf("emulator admin %s %s: HTTP %d", method, path, resp.StatusCode)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// Healthz reports whether the endpoint serves the emulator's admin API.
func (c *AdminClient) Healthz(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "healthz", nil, nil)
}

// Counts returns the per-action call counters.
func (c *AdminClient) Counts(ctx context.Context) (map[string]ActionCount, error) {
	var out map[string]ActionCount
	return out, c.do(ctx, http.MethodGet, "counts", nil, &out)
}

// ResetCounts zeroes the counters and the call log.
func (c *AdminClient) ResetCounts(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "counts/reset", nil, nil)
}

// Calls returns the recorded EC2 requests.
func (c *AdminClient) Calls(ctx context.Context) ([]Call, error) {
	var out []Call
	return out, c.do(ctx, http.MethodGet, "calls", nil, &out)
}

// Configure changes throttling, latency, faults and permissions. As with
// Emulator.Configure, nil fields leave the current value alone and an
// empty Faults, Buckets or Denied clears that set.
func (c *AdminClient) Configure(ctx context.Context, cfg Config) error {
	return c.do(ctx, http.MethodPost, "config", cfg, nil)
}

// Load adds a World.
func (c *AdminClient) Load(ctx context.Context, w World) (LoadResult, error) {
	var out LoadResult
	return out, c.do(ctx, http.MethodPost, "world", w, &out)
}
