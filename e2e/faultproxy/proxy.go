// Package faultproxy is a TCP proxy for tests that injects network faults
// between real processes on loopback: it accepts connections, dials the
// upstream for each, and copies bytes both ways, unless told to cut the
// current connections, refuse new ones (a partition), add latency, drop a
// connection after N bytes, blackhole (accept but never forward), or lose
// the replies (forward the requests, throw away what comes back).
//
// Every control acts on one Proxy and takes effect at once, on the
// connections already open as well as on new ones (see each method). The
// proxy counts what it forwards, so a test or a benchmark can read the
// bytes that really crossed the wire.
//
// Only tests and benchmarks import it; it listens wherever it is told, and
// the callers in this module give it loopback addresses only.
package faultproxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// ErrClosed is returned by controls called after Close.
var ErrClosed = errors.New("faultproxy: closed")

// DialTimeout bounds the dial of the upstream for one accepted connection.
const DialTimeout = 2 * time.Second

// Stats counts what a proxy did since it was created.
type Stats struct {
	Accepted   int   // connections accepted
	Forwarded  int   // accepted connections whose upstream dial succeeded
	DialFailed int   // accepted connections reset because the upstream did not answer
	Blackholed int   // accepted connections held without forwarding
	Cut        int   // connections closed by Cut, Partition or Close
	Dropped    int   // connections closed by DropAfter's limit
	BytesUp    int64 // bytes written to the upstream (client to server)
	BytesDown  int64 // bytes written to the client (server to client)
	BytesLost  int64 // server-to-client bytes thrown away by LoseReplies
}

// Proxy forwards TCP connections from its listening address to an upstream
// address, with faults. The zero value is not usable: call New.
type Proxy struct {
	mu        sync.Mutex
	addr      string // the bound listening address, kept across Refuse/Accept
	ln        net.Listener
	upstream  string
	links     map[*link]struct{}
	latency   time.Duration
	dropAfter int64 // bytes per connection; < 0: no limit
	blackhole bool
	open      chan struct{} // closed while the blackhole is off
	lose      bool          // throw away server-to-client bytes
	stats     Stats
	closed    bool
	wg        sync.WaitGroup
}

// New listens on listen (e.g. "127.0.0.1:0") and forwards each accepted
// connection to upstream, which may be empty until SetUpstream (connections
// accepted meanwhile are reset).
func New(listen, upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{addr: ln.Addr().String(), upstream: upstream, links: map[*link]struct{}{},
		dropAfter: -1, open: make(chan struct{})}
	close(p.open)
	p.serve(ln)
	return p, nil
}

// Addr returns the address the proxy listens on (host:port), the same
// across Refuse and Accept.
func (p *Proxy) Addr() string { return p.addr }

// Upstream returns the address connections are forwarded to.
func (p *Proxy) Upstream() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.upstream
}

// SetUpstream changes where new connections are forwarded; open ones keep
// their upstream.
func (p *Proxy) SetUpstream(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.upstream = addr
}

// Stats returns the counters so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Conns returns the number of connections open through the proxy.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Cut closes every open connection abruptly (a TCP reset to both ends) and
// returns how many it closed. New connections are accepted as before.
func (p *Proxy) Cut() int {
	p.mu.Lock()
	links := p.snapshotLocked()
	p.stats.Cut += len(links)
	p.mu.Unlock()
	for _, l := range links {
		l.close()
	}
	return len(links)
}

func (p *Proxy) snapshotLocked() []*link {
	out := make([]*link, 0, len(p.links))
	for l := range p.links {
		out = append(out, l)
	}
	return out
}

// Refuse stops listening: new connections are refused by the kernel (a
// reset answers the SYN) until Accept. Open connections are untouched.
func (p *Proxy) Refuse() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if p.ln == nil {
		return nil
	}
	err := p.ln.Close()
	p.ln = nil
	return err
}

// Accept listens again on the same address after Refuse.
func (p *Proxy) Accept() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if p.ln != nil {
		return nil
	}
	ln, err := listenRetry(p.addr)
	if err != nil {
		return fmt.Errorf("faultproxy: listen again: %w", err)
	}
	p.serveLocked(ln)
	return nil
}

// listenRetry binds addr, retrying briefly: the port was ours a moment ago.
func listenRetry(addr string) (net.Listener, error) {
	var err error
	for i := 0; i < 50; i++ {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, err
}

// Partition cuts every open connection and refuses new ones, until Heal
// or Accept.
func (p *Proxy) Partition() error {
	if err := p.Refuse(); err != nil {
		return err
	}
	p.Cut()
	return nil
}

// SetLatency delays every chunk of bytes by d in each direction, on open
// and new connections (0: none). Order is kept; throughput is not limited.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = max(d, 0)
}

// DropAfter closes each connection abruptly once it has forwarded n more
// bytes (both directions together), counted from this call for open
// connections and from the accept for new ones. n < 0 removes the limit.
func (p *Proxy) DropAfter(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropAfter = max(n, -1)
	for l := range p.links {
		l.budget.set(p.dropAfter)
	}
}

// Blackhole, when on, accepts new connections without ever dialing the
// upstream (their bytes are read and thrown away) and stalls the open
// ones: bytes they receive are held, not forwarded, until the blackhole is
// lifted. Connections accepted during a blackhole stay dead after it is
// lifted; Cut closes them.
func (p *Proxy) Blackhole(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on == p.blackhole {
		return
	}
	p.blackhole = on
	if on {
		p.open = make(chan struct{})
	} else {
		close(p.open)
	}
}

// LoseReplies, when on, throws away every byte the upstream sends back, on
// open and new connections, while the client's bytes still reach it: a
// request arrives and is acted on, and its reply is lost. The connections
// stay open; Cut closes them.
func (p *Proxy) LoseReplies(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lose = on
}

func (p *Proxy) losing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lose
}

// Heal removes every fault: it accepts again, lifts the blackhole, stops
// losing replies, and removes latency and the byte limit. Connections
// already cut stay closed.
func (p *Proxy) Heal() error {
	p.Blackhole(false)
	p.LoseReplies(false)
	p.SetLatency(0)
	p.DropAfter(-1)
	return p.Accept()
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	var err error
	if p.ln != nil {
		err = p.ln.Close()
		p.ln = nil
	}
	if p.blackhole {
		p.blackhole = false
		close(p.open)
	}
	p.mu.Unlock()
	p.Cut()
	p.wg.Wait()
	return err
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.serveLocked(ln)
}

func (p *Proxy) serveLocked(ln net.Listener) {
	p.ln = ln
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by Refuse or Close
			}
			p.accepted(ln, c.(*net.TCPConn))
		}
	}()
}

// accepted sets up one connection: blackholed, or forwarded once the
// upstream is dialled (in its own goroutine, so accepting goes on). A
// connection whose listener was closed (by Refuse, Partition or Close)
// between the accept and this call is reset: the fault that closed the
// listener was meant to reach it too, and Cut did not see it.
func (p *Proxy) accepted(ln net.Listener, c *net.TCPConn) {
	p.mu.Lock()
	if p.closed || p.ln != ln {
		p.mu.Unlock()
		reset(c)
		return
	}
	p.stats.Accepted++
	l := newLink(p, c)
	p.links[l] = struct{}{}
	hole, upstream := p.blackhole, p.upstream
	if hole {
		p.stats.Blackholed++
	}
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		if hole {
			l.swallow()
			return
		}
		l.forward(upstream)
	}()
}

func (p *Proxy) removeLink(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.links, l)
}

// gate returns the channel that is closed while the blackhole is off.
func (p *Proxy) gate() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open
}

func (p *Proxy) currentLatency() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latency
}

func (p *Proxy) count(up bool, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if up {
		p.stats.BytesUp += int64(n)
	} else {
		p.stats.BytesDown += int64(n)
	}
}

func (p *Proxy) countEvent(f func(*Stats)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(&p.stats)
}

// reset closes c so that the peer sees a TCP reset, not an orderly end.
func reset(c *net.TCPConn) {
	_ = c.SetLinger(0)
	_ = c.Close()
}
