package emulator

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Emulator is an EC2 Query API server for the ENI subset of EC2. It serves
// the EC2 API at POST / and its admin API under AdminPrefix.
type Emulator struct {
	opts Options

	mu    sync.Mutex // guards world
	world *world

	cfgMu   sync.Mutex // guards cfg, buckets, rng, auth
	cfg     runtimeConfig
	buckets map[string]*rate.Limiter
	rng     *rand.Rand
	auth    authState

	statsMu sync.Mutex // guards counts and calls
	counts  map[string]*ActionCount
	calls   []Call
	reqSeq  uint64

	recordAuth atomic.Bool // RecordAuth
}

type runtimeConfig struct {
	throttling  bool
	latency     time.Duration
	faultRate   float64
	detachDelay time.Duration
	visibility  time.Duration
	ignoreToken bool
	faults      map[string]Fault
	buckets     map[string]Bucket
	denied      map[string]bool
	lag         lagConfig
	down        bool
	auth        Auth
}

// maxRecordedCalls bounds the call log kept for tests and the admin API.
const maxRecordedCalls = 20000

// New returns an emulator with an empty world.
func New(o Options) *Emulator {
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.AccountID == "" {
		o.AccountID = "123456789012"
	}
	if o.DetachDelay == 0 {
		o.DetachDelay = 500 * time.Millisecond
	}
	e := &Emulator{opts: o}
	e.Reset()
	return e
}

// Reset empties the world, the counters and the call log, and returns the
// runtime configuration to the construction Options.
func (e *Emulator) Reset() {
	e.mu.Lock()
	e.world = newWorld(e.opts.Region, e.opts.AccountID, e.opts.Seed)
	e.mu.Unlock()

	e.cfgMu.Lock()
	e.cfg = runtimeConfig{
		throttling: e.opts.Throttling, latency: e.opts.Latency, faultRate: e.opts.FaultRate,
		detachDelay: e.opts.DetachDelay, visibility: e.opts.VisibilityDelay, faults: map[string]Fault{}, buckets: map[string]Bucket{}, denied: map[string]bool{},
		lag: lagConfigOf(e.opts), ignoreToken: e.opts.IgnoreClientToken,
	}
	e.buckets = map[string]*rate.Limiter{}
	e.rng = rand.New(rand.NewPCG(uint64(e.opts.Seed)+1, 7))
	e.auth = authState{issued: map[string]time.Time{}}
	e.cfgMu.Unlock()

	e.ResetCounts()
}

// Configure changes throttling, latency, faults and permissions at runtime:
// see Config for which fields leave the current value alone.
func (e *Emulator) Configure(c Config) error {
	if err := c.check(); err != nil {
		return err
	}
	e.cfgMu.Lock()
	defer e.cfgMu.Unlock()
	e.cfg.lag.applyLags(c)
	if c.Down != nil {
		e.cfg.down = *c.Down
	}
	if c.Auth != nil {
		e.cfg.auth = *c.Auth
	}
	if c.Throttling != nil {
		e.cfg.throttling = *c.Throttling
		e.buckets = map[string]*rate.Limiter{} // start full, as after a quiet period
	}
	if c.Latency != nil {
		e.cfg.latency = c.Latency.Duration
	}
	if c.FaultRate != nil {
		e.cfg.faultRate = *c.FaultRate
	}
	if c.DetachDelay != nil {
		e.cfg.detachDelay = c.DetachDelay.Duration
	}
	if c.VisibilityDelay != nil {
		e.cfg.visibility = c.VisibilityDelay.Duration
	}
	if c.IgnoreClientToken != nil {
		e.cfg.ignoreToken = *c.IgnoreClientToken
	}
	if c.Faults != nil {
		e.cfg.faults = maps.Clone(c.Faults)
	}
	if c.Buckets != nil {
		e.cfg.buckets = maps.Clone(c.Buckets)
		e.buckets = map[string]*rate.Limiter{}
	}
	if c.Denied != nil {
		e.cfg.denied = map[string]bool{}
		for _, a := range c.Denied {
			e.cfg.denied[a] = true
		}
	}
	return nil
}

// check refuses a Config with rates, bucket sizes or delays out of range,
// before Configure changes anything.
func (c Config) check() error {
	for name, f := range c.Faults {
		if f.ErrorRate < 0 || f.ErrorRate > 1 || f.TimeoutRate < 0 || f.TimeoutRate > 1 {
			return fmt.Errorf("fault %q: rates must be within [0,1]", name)
		}
	}
	for name, b := range c.Buckets {
		if b.Size < 1 || b.Refill < 0 {
			return fmt.Errorf("bucket %q: size must be >= 1 and refill >= 0", name)
		}
	}
	return c.checkLags()
}

// Counts returns a copy of the per-action counters.
func (e *Emulator) Counts() map[string]ActionCount {
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	out := make(map[string]ActionCount, len(e.counts))
	for a, c := range e.counts {
		cp := *c
		cp.Errors = make(map[string]int, len(c.Errors))
		for k, v := range c.Errors {
			cp.Errors[k] = v
		}
		out[a] = cp
	}
	return out
}

// ResetCounts zeroes the counters and empties the call log.
func (e *Emulator) ResetCounts() {
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	e.counts = map[string]*ActionCount{}
	e.calls = nil
}

// Calls returns the recorded EC2 requests, oldest first (at most the last
// 20,000).
func (e *Emulator) Calls() []Call {
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	return append([]Call(nil), e.calls...)
}

// ServeHTTP answers the EC2 Query API and, under AdminPrefix, the admin API.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, AdminPrefix) {
		e.serveAdmin(w, r)
		return
	}
	requestID := e.newRequestID()
	if err := r.ParseForm(); err != nil {
		writeError(w, requestID, apiErr("InvalidParameterValue", "cannot parse the request: %v", err))
		return
	}
	p := params(r.Form)
	action := p.get("Action")
	if action == "AssumeRoleWithWebIdentity" {
		e.serveSTS(w, p, requestID)
		return
	}
	if e.down() {
		e.countCall(action, p, accessKeyID(r))
		e.countError(action, "Unreachable")
		if !drop(w) {
			writeError(w, requestID, apiErr("Unavailable", "EC2 is down (emulated outage)"))
		}
		return
	}
	if err := e.checkCredentials(r); err != nil {
		e.countCall(action, p, accessKeyID(r))
		e.countError(action, err.Code)
		writeError(w, requestID, err)
		return
	}
	h, ok := handlerFor(action)
	if !ok {
		writeError(w, requestID, apiErr("InvalidAction", "The action %s is not valid for this web service.", action))
		return
	}
	var auth []AuthRequest
	if e.recordAuth.Load() {
		auth = e.authContext(action, p)
	}
	e.countCall(action, p, accessKeyID(r), auth...)
	resp, err := e.serve(r.Context(), action, h, p)
	if err != nil {
		e.countError(action, err.Code)
		writeError(w, requestID, err)
		return
	}
	resp.meta().RequestID = requestID
	// Encoded whole before anything is sent, so a response is either
	// complete, with its Content-Length, or an error.
	var body bytes.Buffer
	body.WriteString(xml.Header)
	root := xml.StartElement{Name: xml.Name{Space: ec2Namespace, Local: action + "Response"}}
	if err := xml.NewEncoder(&body).EncodeElement(resp, root); err != nil {
		writeError(w, requestID, &apiError{Status: http.StatusInternalServerError, Code: "InternalError", Message: "encoding the response: " + err.Error()})
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Header().Set("Content-Length", strconv.Itoa(body.Len()))
	_, _ = w.Write(body.Bytes())
}

// serve runs one EC2 call through permissions, throttling, injected
// faults and DryRun before the handler itself.
func (e *Emulator) serve(ctx context.Context, action string, h handler, p params) (response, *apiError) {
	plan := e.planCall(action, p)
	if plan.delay > 0 {
		select {
		case <-time.After(plan.delay):
		case <-ctx.Done():
			return nil, apiErr("RequestTimeout", "the client went away")
		}
	}
	if plan.denied {
		return nil, apiErr("UnauthorizedOperation", "You are not authorized to perform this operation. (emulated IAM: %s is denied)", action)
	}
	if plan.throttled {
		return nil, apiErr("RequestLimitExceeded", "Request limit exceeded.")
	}
	if plan.fault != nil && !plan.afterApply {
		return nil, e.failCall(ctx, plan.fault)
	}
	if p.bool("DryRun") {
		return nil, apiErr("DryRunOperation", "Request would have succeeded, but DryRun flag is set.")
	}
	e.mu.Lock()
	now := time.Now()
	e.world.advance(now)
	resp, err := h(e.world, p, callEnv{now: now, detachDelay: plan.detachDelay, visibility: plan.visibility, lag: plan.lag,
		ignoreToken: plan.ignoreToken})
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if plan.fault != nil {
		return nil, e.failCall(ctx, plan.fault)
	}
	return resp, nil
}

// callPlan is what the runtime configuration decided for one call.
type callPlan struct {
	delay       time.Duration
	denied      bool
	throttled   bool
	fault       *apiError // error to answer, nil when the call goes through
	afterApply  bool
	detachDelay time.Duration
	visibility  time.Duration
	lag         lagConfig
	ignoreToken bool
}

func (e *Emulator) planCall(action string, p params) callPlan {
	e.cfgMu.Lock()
	defer e.cfgMu.Unlock()
	plan := callPlan{delay: e.cfg.latency, denied: e.cfg.denied[action], detachDelay: e.cfg.detachDelay,
		visibility: e.cfg.visibility, lag: e.cfg.lag, ignoreToken: e.cfg.ignoreToken}
	f, ok := e.cfg.faults[action]
	if !ok {
		f = e.cfg.faults["*"]
	}
	plan.delay += f.Latency.Duration
	if f.Jitter.Duration > 0 {
		plan.delay += time.Duration(e.rng.Int64N(int64(f.Jitter.Duration)))
	}
	if plan.denied {
		return plan
	}
	if e.cfg.throttling && !e.bucketFor(action, p).Allow() {
		plan.throttled = true
		e.statsMu.Lock()
		e.counts[action].Throttled++
		e.statsMu.Unlock()
		return plan
	}
	switch roll := e.rng.Float64(); {
	case roll < f.TimeoutRate:
		plan.fault = apiErr("RequestTimeout", "emulated timeout")
	case roll < f.TimeoutRate+f.ErrorRate:
		code := f.ErrorCode
		if code == "" {
			code = "InternalError"
		}
		plan.fault = apiErr(code, "emulated fault: %s", code)
	case e.rng.Float64() < e.cfg.faultRate:
		plan.fault = apiErr("InternalError", "An internal error has occurred (emulated fault)")
	}
	plan.afterApply = plan.fault != nil && f.AfterApply
	return plan
}

// failCall answers an injected fault; a timeout holds the request until
// the client gives up (or a minute passes), as a lost response would.
func (e *Emulator) failCall(ctx context.Context, fault *apiError) *apiError {
	if fault.Code == "RequestTimeout" {
		select {
		case <-ctx.Done():
		case <-time.After(time.Minute):
		}
	}
	return fault
}

func (e *Emulator) bucketFor(action string, p params) *rate.Limiter {
	key, b := defaultBucket(action, p)
	if o, ok := e.cfg.buckets[action]; ok {
		b = o
	}
	l, ok := e.buckets[key]
	if !ok {
		l = rate.NewLimiter(rate.Limit(b.Refill), int(b.Size))
		e.buckets[key] = l
	}
	return l
}

// defaultBucket returns the throttling bucket of an action and AWS's size
// and refill rate for it ("Request throttling for the Amazon EC2 API").
func defaultBucket(action string, p params) (string, Bucket) {
	switch action {
	case "DescribeNetworkInterfaces", "DescribeInstances", "DescribeSecurityGroups":
		if p.members("Filter") == 0 && !p.has("MaxResults") && !p.has("NextToken") &&
			len(p.list("NetworkInterfaceId"))+len(p.list("InstanceId"))+len(p.list("GroupId"))+len(p.list("GroupName")) == 0 {
			return action + "/unfiltered", Bucket{Size: 50, Refill: 10}
		}
	case "CreateTags", "DeleteTags":
		return action, Bucket{Size: 100, Refill: 10}
	case "CreateNetworkInterface", "DeleteNetworkInterface", "ModifyNetworkInterfaceAttribute",
		"AssignPrivateIpAddresses", "UnassignPrivateIpAddresses", "AssignIpv6Addresses", "UnassignIpv6Addresses":
		return action, Bucket{Size: 100, Refill: 5}
	case "RunInstances":
		return action, Bucket{Size: 5, Refill: 2}
	}
	if strings.HasPrefix(action, "Describe") || strings.HasPrefix(action, "Get") {
		return action, Bucket{Size: 100, Refill: 20}
	}
	return action, Bucket{Size: 50, Refill: 5}
}

func (e *Emulator) countCall(action string, p params, caller string, auth ...AuthRequest) {
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	c, ok := e.counts[action]
	if !ok {
		c = &ActionCount{Errors: map[string]int{}}
		e.counts[action] = c
	}
	c.Calls++
	if len(e.calls) >= maxRecordedCalls {
		e.calls = e.calls[1:]
	}
	cp := make(map[string][]string, len(p))
	for k, v := range p {
		if k != "Action" && k != "Version" {
			cp[k] = v
		}
	}
	e.calls = append(e.calls, Call{Time: time.Now(), Action: action, Params: cp, AccessKeyID: caller, Auth: auth})
}

// accessKeyID reads the access key ID from a SigV4 Authorization header
// ("AWS4-HMAC-SHA256 Credential=AKID/date/region/ec2/aws4_request, ...").
// The signature itself is not checked: the emulator has no secrets.
func accessKeyID(r *http.Request) string {
	_, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(cred, "/")
	return id
}

func (e *Emulator) countError(action, code string) {
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	e.counts[action].Errors[code]++
	for i := len(e.calls) - 1; i >= 0; i-- {
		if e.calls[i].Action == action && e.calls[i].Code == "" {
			e.calls[i].Code = code
			break
		}
	}
}

func (e *Emulator) newRequestID() string {
	e.statsMu.Lock()
	e.reqSeq++
	n := e.reqSeq
	e.statsMu.Unlock()
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", n>>16, n)
}

func writeError(w http.ResponseWriter, requestID string, err *apiError) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(err.Status)
	_, _ = w.Write([]byte(xml.Header))
	_ = xml.NewEncoder(w).Encode(xErrorResponse{
		Errors:    []xError{{Code: err.Code, Message: err.Message}},
		RequestID: requestID,
	})
}

// respMeta is what every EC2 response body carries besides its own fields.
type respMeta struct {
	RequestID string `xml:"requestId"`
}

func (m *respMeta) meta() *respMeta { return m }

// response is any EC2 response body; embed respMeta to be one.
type response interface{ meta() *respMeta }

// callEnv carries per-call settings into handlers.
type callEnv struct {
	now         time.Time
	detachDelay time.Duration
	// visibility is how long a created ENI stays unknown to other calls.
	visibility time.Duration
	// lag is how late Describe calls show other writes (consistency.go).
	lag lagConfig
	// ignoreToken: CreateNetworkInterface ignores ClientToken
	// (Options.IgnoreClientToken).
	ignoreToken bool
}

// handler executes one EC2 action against the world, under the world lock.
type handler func(w *world, p params, env callEnv) (response, *apiError)
