package testenv

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// Outage is a TCP proxy in front of an endpoint (the API server, an EC2
// emulator) that can be cut, to test how clients live through the
// endpoint going away and coming back at the same address. While down it
// listens on nothing, so connections are refused, and the open ones are
// cut. (envtest cannot restart kube-apiserver with the same serving
// certificate, so a literal restart would also change the CA clients
// trust; from a client's side, refused and reset connections are what an
// outage is.)
type Outage struct {
	// URL is the proxy's endpoint, the same across outages.
	URL    string
	addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener // nil while down
	conns map[net.Conn]struct{}
}

// NewOutage starts a proxy to the API server of cfg and returns it with a
// copy of cfg that goes through it.
func NewOutage(cfg *rest.Config) (*Outage, *rest.Config, error) {
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, nil, err
	}
	o, err := newOutage("https", u.Host)
	if err != nil {
		return nil, nil, err
	}
	through := rest.CopyConfig(cfg)
	through.Host = o.URL
	return o, through, nil
}

// ServeRestartable serves h (an emulator) over HTTP behind an Outage for
// the test's lifetime: an EC2 endpoint that can go away and come back.
func ServeRestartable(t testing.TB, h http.Handler) *Outage {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	o, err := newOutage("http", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Down)
	return o
}

func newOutage(scheme, target string) (*Outage, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	o := &Outage{URL: scheme + "://" + ln.Addr().String(), addr: ln.Addr().String(), target: target, conns: map[net.Conn]struct{}{}}
	o.serve(ln)
	return o, nil
}

func (o *Outage) serve(ln net.Listener) {
	o.mu.Lock()
	o.ln = ln
	o.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go o.pipe(c)
		}
	}()
}

func (o *Outage) pipe(c net.Conn) {
	up, err := net.Dial("tcp", o.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !o.track(c, up) {
		return
	}
	defer o.forget(c, up)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// track records open connections so Down can cut them; when the proxy
// went down meanwhile it closes them instead and says so.
func (o *Outage) track(conns ...net.Conn) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range conns {
		if o.ln == nil {
			_ = c.Close()
		} else {
			o.conns[c] = struct{}{}
		}
	}
	return o.ln != nil
}

func (o *Outage) forget(conns ...net.Conn) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(o.conns, c)
	}
}

// Down stops listening and cuts every open connection: new ones are
// refused until Up. Down when down does nothing.
func (o *Outage) Down() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ln != nil {
		_ = o.ln.Close()
		o.ln = nil
	}
	for c := range o.conns {
		_ = c.Close()
	}
}

// Up listens on the same address again, waiting a bounded time for the
// port to be free.
func (o *Outage) Up(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ln, err := net.Listen("tcp", o.addr)
		if err == nil {
			o.serve(ln)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("listening on %s again: %v", o.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Close stops the proxy.
func (o *Outage) Close() error {
	o.Down()
	return nil
}
