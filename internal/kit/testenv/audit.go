package testenv

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// AuditEvent is one request in the API server's audit log: the fields
// tests use as evidence of who did what, when.
type AuditEvent struct {
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Stage string `json:"stage"`
	// Received is when the API server got the request.
	Received time.Time `json:"requestReceivedTimestamp"`
	// Stage is when the event was written (a watch's ResponseComplete
	// comes when it ends).
	StageTime time.Time `json:"stageTimestamp"`
}

// List says whether the request read a whole collection: a LIST, or a
// watch that starts by sending every object (a streaming list; counted
// once, at its start, though it is recorded again when it ends).
func (e AuditEvent) List() bool {
	return e.Verb == "list" ||
		e.Verb == "watch" && e.Stage == "ResponseStarted" && strings.Contains(e.RequestURI, "sendInitialEvents=true")
}

// Write says whether the request asked for a change.
func (e AuditEvent) Write() bool {
	return slices.Contains([]string{"create", "update", "patch", "delete", "deletecollection"}, e.Verb)
}

// Audit returns every request the API server recorded across its
// restarts, oldest start first. A request still running (a watch) shows
// once it ends, or as ResponseStarted.
func (cp *ControlPlane) Audit(t testing.TB) []AuditEvent {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(cp.Dir, "audit-*.log"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	var out []AuditEvent
	for _, f := range files {
		out = append(out, readAudit(t, f)...)
	}
	return out
}

func readAudit(t testing.TB, path string) []AuditEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e AuditEvent
		// A line cut by a kill is the only one that may not parse.
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
