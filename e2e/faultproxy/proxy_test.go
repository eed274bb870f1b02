package faultproxy

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// echoServer answers every connection with what it reads, and closes its
// side when the client closes its own.
type echoServer struct {
	ln       net.Listener
	accepted atomic.Int64
}

func newEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.accepted.Add(1)
			go func() {
				_, _ = io.Copy(c, c)
				_ = c.Close()
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return e
}

func (e *echoServer) addr() string { return e.ln.Addr().String() }

func newProxy(t *testing.T, upstream string) *Proxy {
	t.Helper()
	p, err := New("127.0.0.1:0", upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// roundTrip writes msg and reads as many bytes back, within a deadline.
func roundTrip(c net.Conn, msg []byte, within time.Duration) ([]byte, error) {
	_ = c.SetDeadline(time.Now().Add(within))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(msg); err != nil {
		return nil, err
	}
	got := make([]byte, len(msg))
	n, err := io.ReadFull(c, got)
	return got[:n], err
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// waitFor polls cond for up to two seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestForwardCountsBytes(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	msg := randomBytes(t, 300<<10) // several chunks
	got, err := roundTrip(c, msg, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("echo through the proxy differs from what was sent")
	}
	// The proxy counts a chunk once its write returns, which may be after
	// the client already read it.
	// Both directions: the echo can send the last chunk back before the
	// proxy's write of it upstream has returned and been counted.
	waitFor(t, "the counters", func() bool {
		st := p.Stats()
		return st.BytesUp == int64(len(msg)) && st.BytesDown == int64(len(msg))
	})
	st := p.Stats()
	if st.BytesUp != int64(len(msg)) || st.BytesDown != int64(len(msg)) || st.Accepted != 1 || st.Forwarded != 1 {
		t.Errorf("stats = %+v, want 1 accepted and forwarded, %d bytes each way", st, len(msg))
	}
}

func TestHalfCloseEndsInOrder(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	if _, err := c.Write([]byte("bye")); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	got, err := io.ReadAll(c) // EOF, not a reset
	if err != nil || string(got) != "bye" {
		t.Fatalf("read %q, %v; want \"bye\" and an orderly end", got, err)
	}
	waitFor(t, "the link to go away", func() bool { return p.Conns() == 0 })
}

func TestCutResetsOpenConnections(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	if _, err := roundTrip(c, []byte("ping"), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := p.Cut(); got != 1 {
		t.Errorf("Cut() = %d, want 1", got)
	}
	if _, err := roundTrip(c, []byte("ping"), 2*time.Second); err == nil {
		t.Error("a cut connection still echoes")
	}
	c2 := dial(t, p.Addr())
	if _, err := roundTrip(c2, []byte("again"), 2*time.Second); err != nil {
		t.Errorf("a new connection after Cut: %v", err)
	}
	if st := p.Stats(); st.Cut != 1 {
		t.Errorf("Stats().Cut = %d, want 1", st.Cut)
	}
}

func TestPartitionRefusesUntilHeal(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	if err := p.Partition(); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(c, []byte("ping"), 2*time.Second); err == nil {
		t.Error("an open connection survived the partition")
	}
	_, err := net.DialTimeout("tcp", p.Addr(), 2*time.Second)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial during partition: %v, want connection refused", err)
	}
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	c2 := dial(t, p.Addr())
	if _, err := roundTrip(c2, []byte("healed"), 2*time.Second); err != nil {
		t.Errorf("after Heal: %v", err)
	}
}

func TestLatencyDelaysEachDirection(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	const d = 40 * time.Millisecond
	p.SetLatency(d)
	start := time.Now()
	if _, err := roundTrip(c, []byte("slow"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := time.Since(start); got < 2*d {
		t.Errorf("round trip took %v with %v latency each way, want at least %v", got, d, 2*d)
	}
	// Bulk data is delayed, not throttled: many chunks arrive within a few latencies.
	msg := randomBytes(t, 2<<20)
	start = time.Now()
	got, err := roundTrip(c, msg, 10*time.Second)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("bulk echo with latency: %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("2 MiB with %v latency took %v: latency throttles throughput", d, el)
	}
}

func TestDropAfterLimitsBytes(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	if _, err := roundTrip(c, []byte("before"), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	p.DropAfter(150) // counted from now, for the open connection too
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err == nil {
		t.Error("the connection ended in order; want a reset after the limit")
	}
	if len(got) > 50 {
		t.Errorf("read %d bytes back, want at most 50 (150 - 100 up)", len(got))
	}
	waitFor(t, "the drop to be counted", func() bool { return p.Stats().Dropped == 1 })
	// Each direction counts its bytes after its write returns, so the
	// 100 bytes up may be counted after the reply's 50 ended the link.
	moved := func() int64 { st := p.Stats(); return st.BytesUp + st.BytesDown - 2*int64(len("before")) }
	waitFor(t, "150 bytes forwarded after DropAfter(150)", func() bool { return moved() >= 150 })
	if m := moved(); m != 150 {
		t.Errorf("forwarded %d bytes after DropAfter(150), want 150", m)
	}
}

func TestBlackholeHoldsAndSwallows(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.addr())
	old := dial(t, p.Addr())
	if _, err := roundTrip(old, []byte("warm"), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Blackhole(true)
	if _, err := roundTrip(old, []byte("held"), 150*time.Millisecond); err == nil {
		t.Error("an open connection forwarded during the blackhole")
	}
	fresh := dial(t, p.Addr())
	if _, err := roundTrip(fresh, []byte("lost"), 150*time.Millisecond); err == nil {
		t.Error("a blackholed connection answered")
	}
	if got := e.accepted.Load(); got != 1 {
		t.Errorf("upstream accepted %d connections, want 1 (the blackholed one is never dialled)", got)
	}
	p.Blackhole(false)
	// The held bytes flow once the blackhole lifts.
	_ = old.SetReadDeadline(time.Now().Add(2 * time.Second))
	got := make([]byte, 4)
	if _, err := io.ReadFull(old, got); err != nil || string(got) != "held" {
		t.Errorf("after lifting the blackhole read %q, %v; want \"held\"", got, err)
	}
	if n := p.Cut(); n != 2 {
		t.Errorf("Cut() = %d, want 2 (the old and the blackholed connection)", n)
	}
	if st := p.Stats(); st.Blackholed != 1 {
		t.Errorf("Stats().Blackholed = %d, want 1", st.Blackholed)
	}
}

func TestDeadUpstreamResets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	p := newProxy(t, dead)
	// The reset may come before the dial has even returned.
	if c, err := net.DialTimeout("tcp", p.Addr(), 2*time.Second); err == nil {
		if _, err := roundTrip(c, []byte("x"), 2*time.Second); err == nil {
			t.Error("a connection to a dead upstream echoed")
		}
		c.Close()
	}
	waitFor(t, "the failed dial to be counted", func() bool { return p.Stats().DialFailed == 1 })
	e := newEcho(t)
	p.SetUpstream(e.addr())
	if _, err := roundTrip(dial(t, p.Addr()), []byte("y"), 2*time.Second); err != nil {
		t.Errorf("after SetUpstream: %v", err)
	}
}

func TestClosedProxyRefusesControls(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	if _, err := roundTrip(c, []byte("x"), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(c, []byte("x"), time.Second); err == nil {
		t.Error("a connection survived Close")
	}
	for name, f := range map[string]func() error{"Refuse": p.Refuse, "Accept": p.Accept, "Partition": p.Partition, "Heal": p.Heal} {
		if err := f(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
}

func TestLoseRepliesForwardsRequestsOnly(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	got := make(chan []byte, 4)
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, 5)
				for {
					if _, err := io.ReadFull(c, b); err != nil {
						return
					}
					got <- append([]byte(nil), b...)
					if _, err := c.Write(b); err != nil {
						return
					}
				}
			}()
		}
	}()
	p := newProxy(t, up.Addr().String())
	c := dial(t, p.Addr())
	if b, err := roundTrip(c, []byte("hello"), 2*time.Second); err != nil || string(b) != "hello" {
		t.Fatalf("before: %q, %v", b, err)
	}
	<-got
	p.LoseReplies(true)
	if b, err := roundTrip(c, []byte("again"), 300*time.Millisecond); err == nil || len(b) != 0 {
		t.Errorf("with replies lost the client read %q, %v; want nothing before the deadline", b, err)
	}
	select {
	case b := <-got:
		if string(b) != "again" {
			t.Errorf("the upstream got %q, want again", b)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the request did not reach the upstream while replies were lost")
	}
	waitFor(t, "the lost reply counted", func() bool { return p.Stats().BytesLost == 5 })
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	c2 := dial(t, p.Addr())
	if b, err := roundTrip(c2, []byte("third"), 2*time.Second); err != nil || string(b) != "third" {
		t.Errorf("after heal: %q, %v", b, err)
	}
}
