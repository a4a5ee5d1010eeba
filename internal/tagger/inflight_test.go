package tagger

import (
	"errors"
	"testing"
)

func TestWritesInFlight(t *testing.T) {
	var w writesInFlight
	if wrote, err, busy := w.status("a"); wrote || err != nil || busy || w.running("a") {
		t.Fatal("a pod with no write reports one")
	}
	w.begin("a")
	if _, _, busy := w.status("a"); !busy || !w.running("a") {
		t.Fatal("a running write is not reported")
	}
	w.end("a", nil)
	if wrote, err, busy := w.status("a"); !wrote || err != nil || busy {
		t.Fatal("a finished write is not reported")
	}
	if wrote, _, _ := w.status("a"); wrote {
		t.Fatal("a finished write is reported twice")
	}
	w.begin("b")
	w.end("b", errors.New("throttled"))
	if wrote, err, _ := w.status("b"); wrote || err == nil {
		t.Fatal("a failed write is not reported as failed")
	}
}
