package testenv

import (
	"io"
	"net"
	"net/url"
	"sync"

	"k8s.io/client-go/rest"
)

// Outage is a TCP proxy in front of the API server that can be cut, to
// test how the operator lives through the API server being down. (envtest
// cannot restart kube-apiserver with the same serving certificate, so a
// literal restart would also change the CA clients trust; from a client's
// side, refused and reset connections are what an outage is.)
type Outage struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

// NewOutage starts a proxy to the API server of cfg and returns it with a
// copy of cfg that goes through it.
func NewOutage(cfg *rest.Config) (*Outage, *rest.Config, error) {
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	o := &Outage{ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}}
	go o.serve()
	through := rest.CopyConfig(cfg)
	through.Host = "https://" + ln.Addr().String()
	return o, through, nil
}

func (o *Outage) serve() {
	for {
		c, err := o.ln.Accept()
		if err != nil {
			return
		}
		o.mu.Lock()
		if o.down {
			o.mu.Unlock()
			_ = c.Close()
			continue
		}
		o.conns[c] = struct{}{}
		o.mu.Unlock()
		go o.pipe(c)
	}
}

func (o *Outage) pipe(c net.Conn) {
	defer o.forget(c)
	up, err := net.Dial("tcp", o.target)
	if err != nil {
		return
	}
	o.mu.Lock()
	if o.down {
		o.mu.Unlock()
		_ = up.Close()
		return
	}
	o.conns[up] = struct{}{}
	o.mu.Unlock()
	defer o.forget(up)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

func (o *Outage) forget(c net.Conn) {
	_ = c.Close()
	o.mu.Lock()
	delete(o.conns, c)
	o.mu.Unlock()
}

// Down cuts every open connection and refuses new ones until Up.
func (o *Outage) Down() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down = true
	for c := range o.conns {
		_ = c.Close()
	}
}

// Up lets connections through again.
func (o *Outage) Up() {
	o.mu.Lock()
	o.down = false
	o.mu.Unlock()
}

// Close stops the proxy.
func (o *Outage) Close() error {
	o.Down()
	return o.ln.Close()
}
