package node

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
)

func mustKey(t *testing.T, b byte) *Key {
	t.Helper()
	k, err := NewKey(fixedEntropy(b))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustCert(t *testing.T, k *Key) tls.Certificate {
	t.Helper()
	c, err := k.Certificate()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// serveTLS starts an HTTPS server for key that trusts the IDs in known and
// counts the requests its handler reads.
func serveTLS(t *testing.T, key *Key, known ...ID) (addr string, handled *atomic.Int64) {
	t.Helper()
	handled = new(atomic.Int64)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	trusted := map[ID]bool{}
	for _, id := range known {
		trusted[id] = true
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			handled.Add(1)
			id, _ := PeerID(r.TLS.PeerCertificates)
			io.WriteString(w, string(id))
		}),
		TLSConfig: ServerTLS(mustCert(t, key), func(id ID) bool { return trusted[id] }),
		ErrorLog:  log.New(io.Discard, "", 0),
	}
	go srv.Serve(tls.NewListener(ln, srv.TLSConfig))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), handled
}

func get(key *Key, cert tls.Certificate, want ID, addr string) (string, error) {
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: ClientTLS(cert, want)}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://" + addr + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestMutualTLSPinsBothIDs(t *testing.T) {
	a, b, stranger := mustKey(t, 1), mustKey(t, 2), mustKey(t, 3)
	addr, handled := serveTLS(t, b, a.ID())

	t.Run("known peer, right ID", func(t *testing.T) {
		got, err := get(a, mustCert(t, a), b.ID(), addr)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(a.ID()) {
			t.Errorf("server saw peer %q, want %q", got, a.ID())
		}
	})
	before := handled.Load()

	t.Run("unknown client refused in the handshake", func(t *testing.T) {
		_, err := get(stranger, mustCert(t, stranger), b.ID(), addr)
		if err == nil {
			t.Fatal("stranger got an answer")
		}
	})
	t.Run("client refuses a server with another ID", func(t *testing.T) {
		_, err := get(a, mustCert(t, a), stranger.ID(), addr)
		var pe *PeerIDError
		if !errors.As(err, &pe) || pe.Want != stranger.ID() || pe.Got != b.ID() {
			t.Fatalf("err = %v, want PeerIDError{Want: %s, Got: %s}", err, stranger.ID(), b.ID())
		}
		if !errors.Is(err, ErrPeerRefused) {
			t.Errorf("err does not wrap ErrPeerRefused: %v", err)
		}
	})
	t.Run("TLS 1.2 refused", func(t *testing.T) {
		cfg := ClientTLS(mustCert(t, a), b.ID())
		cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
		conn, err := tls.Dial("tcp", addr, cfg)
		if err == nil {
			conn.Close()
			t.Fatal("TLS 1.2 handshake succeeded")
		}
	})
	if got := handled.Load() - before; got != 0 {
		t.Errorf("handler read %d requests from refused peers, want 0", got)
	}
}

func TestPeerIDNeedsEd25519SelfSigned(t *testing.T) {
	if _, err := PeerID(nil); !errors.Is(err, ErrPeerRefused) {
		t.Errorf("PeerID(nil) = %v", err)
	}
}

// fixedEntropy makes key generation deterministic in tests.
func fixedEntropy(b byte) *bytes.Reader { return bytes.NewReader(bytes.Repeat([]byte{b}, 64)) }
