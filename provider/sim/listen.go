package sim

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ErrNotLoopback is returned for a listen address that is not loopback:
// the simulator is for this machine only.
var ErrNotLoopback = errors.New("sim: listen address is not loopback")

// Listen listens on addr, which must name a loopback host (127.0.0.1,
// ::1 or localhost); port 0 picks a free port.
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("sim: listen %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%w: %q", ErrNotLoopback, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sim: listen: %w", err)
	}
	return ln, nil
}

// Running is a server listening on loopback, started by Start.
type Running struct {
	*Server
	// URL is the base URL, http://HOST:PORT, without a trailing slash.
	URL string
	hs  *http.Server
	ln  net.Listener
}

// Start serves a new server on addr (see Listen) in the background, for
// the demo and tests that want the endpoint in-process.
func Start(addr string, cfg Config) (*Running, error) {
	ln, err := Listen(addr)
	if err != nil {
		return nil, err
	}
	s := New(cfg)
	r := &Running{Server: s, URL: "http://" + ln.Addr().String(), hs: &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}, ln: ln}
	go r.hs.Serve(ln)
	return r, nil
}

// Close stops the server and closes its connections.
func (r *Running) Close() error { return r.hs.Close() }
