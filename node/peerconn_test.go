package node

import (
	"bytes"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// peerTransport is the transport client() builds for a peer, without a
// node.
func peerTransport(t *testing.T, key *Key, want ID) http.RoundTripper {
	dial := dialPeerTLS(ClientTLS(mustCert(t, key), want))
	return alertTransport{rt: &http.Transport{DialTLSContext: dial}, dial: dial}
}

// A peer that does not trust this node refuses it after this node's TLS
// 1.3 handshake has ended, so a request with a large body usually fails
// on its write ("broken pipe", "use of closed network connection"),
// which says nothing of the refusal. The error must name the peer's TLS
// alert every time (issue 10 item 4).
func TestRefusedPeerErrorNamesTheAlert(t *testing.T) {
	a, b := mustKey(t, 1), mustKey(t, 2)
	addr, handled := serveTLS(t, b) // b trusts nobody
	rt := peerTransport(t, a, b.ID())
	body := bytes.Repeat([]byte("x"), 4<<20)
	for i := range 10 {
		req, err := http.NewRequest(http.MethodPost, "https://"+addr+"/push", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, err = rt.RoundTrip(req)
		if err == nil || !strings.Contains(err.Error(), "remote error: tls") {
			t.Fatalf("request %d: err = %v, want one naming the peer's TLS alert", i, err)
		}
	}
	if n := handled.Load(); n != 0 {
		t.Errorf("the refusing peer's handler ran %d times", n)
	}
}

// A connection that breaks for another reason gets no invented cause: a
// peer that accepts this node, reads the request and closes the
// connection sends no alert, and the probe's own read deadline is not
// reported either.
func TestBrokenConnectionNotBlamedOnTLS(t *testing.T) {
	a, b := mustKey(t, 1), mustKey(t, 2)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	cfg := ServerTLS(mustCert(t, b), func(id ID) bool { return id == a.ID() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				tc := tls.Server(c, cfg)
				defer tc.Close()
				_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
				_, _ = tc.Read(make([]byte, 1)) // the request's first byte, then hang up
			}()
		}
	}()
	rt := peerTransport(t, a, b.ID())
	req, err := http.NewRequest(http.MethodGet, "https://"+ln.Addr().String()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = rt.RoundTrip(req)
	if err == nil {
		t.Fatal("a peer that hangs up answered")
	}
	if strings.Contains(err.Error(), "closed after") {
		t.Errorf("err = %v: a cause was added to a connection that broke without an alert", err)
	}
}
