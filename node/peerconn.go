package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"sync"
	"time"
)

// A peer that does not trust this node refuses it in the TLS handshake
// (PROTOCOL §4a), but under TLS 1.3 the client's handshake ends before the
// server has checked the client's certificate: the refusal arrives as an
// alert on the first read. net/http reads and writes a connection in two
// goroutines, so a request whose body is still being written when the alert
// arrives fails with the write's "use of closed network connection", and
// the reason (the alert) is lost. peerConn keeps the first error a read of
// the connection met, and alertTransport adds it to the request's error;
// when the connection broke before any read saw the alert, alertTransport
// dials once more and reads for probeWait to learn it.

// peerConn is a client TLS connection to a peer that remembers the first
// error its reads returned.
type peerConn struct {
	*tls.Conn
	mu      sync.Mutex
	readErr error
}

func (c *peerConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, os.ErrDeadlineExceeded) {
		c.mu.Lock()
		if c.readErr == nil {
			c.readErr = err
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *peerConn) firstReadErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr
}

// dialPeerTLS dials addr and completes the handshake with cfg, returning a
// peerConn (the transport uses it as an established TLS connection).
func dialPeerTLS(cfg *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(raw, cfg)
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := tc.HandshakeContext(hctx); err != nil {
			raw.Close()
			return nil, err
		}
		return &peerConn{Conn: tc}, nil
	}
}

// probeWait bounds how long a probe reads for a peer's alert. A refusing
// peer sends it one round trip after the handshake; a peer that accepts
// sends nothing, so the probe of a connection that broke for another
// reason costs this long, once per failed request.
const probeWait = 500 * time.Millisecond

// alertTransport adds to a failed request's error the error the
// connection's reads met first, when that is not already its cause: most
// often the peer's TLS alert ("remote error: tls: …").
type alertTransport struct {
	rt   http.RoundTripper
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (t alertTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var mu sync.Mutex
	var conn *peerConn
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if c, ok := i.Conn.(*peerConn); ok {
			mu.Lock()
			conn = c
			mu.Unlock()
		}
	}}
	resp, err := t.rt.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	if err == nil {
		return resp, nil
	}
	mu.Lock()
	c := conn
	mu.Unlock()
	if c == nil {
		return nil, err
	}
	rerr := c.firstReadErr()
	if rerr == nil {
		rerr = t.probe(req.Context(), req.URL.Host)
	}
	if rerr != nil && !errors.Is(err, rerr) && rerr.Error() != err.Error() {
		return nil, fmt.Errorf("%w (the connection was closed after: %v)", err, rerr)
	}
	return nil, err
}

// probe dials addr again and returns the error a read meets within
// probeWait, or nil if none: the alert of a peer that refuses this node.
func (t alertTransport) probe(ctx context.Context, addr string) error {
	if t.dial == nil || ctx.Err() != nil {
		return nil
	}
	conn, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return nil // the request's own error says enough
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(probeWait))
	_, _ = conn.Read(make([]byte, 1))
	return conn.(*peerConn).firstReadErr()
}
