package faultproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// chunkSize is the most one read forwards at a time.
const chunkSize = 32 << 10

// queueLen bounds the chunks in flight in one direction (the latency line).
const queueLen = 64

var chunkPool = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

// link is one proxied connection: the accepted client side and, once
// dialled, the upstream side.
type link struct {
	p      *Proxy
	client *net.TCPConn
	budget budget
	done   chan struct{} // closed when the link is torn down

	mu       sync.Mutex
	upstream *net.TCPConn
	once     sync.Once
	dropped  sync.Once
}

func newLink(p *Proxy, c *net.TCPConn) *link {
	l := &link{p: p, client: c, done: make(chan struct{})}
	l.budget.set(p.dropAfter)
	return l
}

// close tears the link down abruptly: both ends see a reset.
func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		l.mu.Lock()
		up := l.upstream
		l.mu.Unlock()
		reset(l.client)
		if up != nil {
			reset(up)
		}
	})
}

// finish ends a link whose both directions ended in order.
func (l *link) finish() {
	l.once.Do(func() {
		close(l.done)
		l.mu.Lock()
		up := l.upstream
		l.mu.Unlock()
		_ = l.client.Close()
		if up != nil {
			_ = up.Close()
		}
	})
}

// drop closes the link because DropAfter's limit was reached.
func (l *link) drop() {
	l.dropped.Do(func() { l.p.countEvent(func(s *Stats) { s.Dropped++ }) })
	l.close()
}

// swallow reads and discards what the client sends until the link is cut
// or the client goes away: a blackholed connection.
func (l *link) swallow() {
	defer l.p.removeLink(l)
	_, _ = io.Copy(io.Discard, l.client)
	l.close()
}

// forward dials the upstream and copies both ways until both directions
// end or the link is torn down.
func (l *link) forward(upstream string) {
	defer l.p.removeLink(l)
	up, err := l.dial(upstream)
	if err != nil {
		l.p.countEvent(func(s *Stats) { s.DialFailed++ })
		l.close()
		return
	}
	l.p.countEvent(func(s *Stats) { s.Forwarded++ })
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); l.pipe(l.client, up, true) }()
	go func() { defer wg.Done(); l.pipe(up, l.client, false) }()
	wg.Wait()
	l.finish()
}

// dial connects to upstream, giving up if the link is cut meanwhile.
func (l *link) dial(upstream string) (*net.TCPConn, error) {
	if upstream == "" {
		return nil, errors.New("faultproxy: no upstream")
	}
	ctx, cancel := context.WithTimeout(context.Background(), DialTimeout)
	defer cancel()
	go func() {
		select {
		case <-l.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", upstream)
	if err != nil {
		return nil, err
	}
	up := c.(*net.TCPConn)
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.done:
		reset(up)
		return nil, errors.New("faultproxy: cut while dialling")
	default:
	}
	l.upstream = up
	return up, nil
}

// chunk is a piece of the byte stream on its way through the latency line.
type chunk struct {
	buf  *[]byte
	n    int
	due  time.Time
	last bool // the byte limit ends the connection after this chunk
}

// readEnd says how reading one direction ended.
type readEnd int

const (
	endEOF     readEnd = iota // the sender closed its side in order
	endFailed                 // a read error, a reset or a cut
	endLimited                // the byte limit: the last chunk is queued
)

// pipe copies src to dst through a queue that applies latency; the byte
// limit and the blackhole act as bytes are read. An orderly end of src
// half-closes dst; an error tears the whole link down at once.
func (l *link) pipe(src, dst *net.TCPConn, up bool) {
	queue := make(chan chunk, queueLen)
	wrote := make(chan bool, 1)
	go func() { wrote <- l.drain(queue, dst, up) }()
	end := l.read(src, queue, up)
	close(queue)
	if end == endFailed {
		l.close()
	}
	if ok := <-wrote; ok && end == endEOF {
		_ = dst.CloseWrite()
		return
	}
	l.close()
}

// read moves src's bytes into queue until EOF, an error, a cut, or the
// byte limit. Replies (up false) read while the proxy loses them are
// thrown away.
func (l *link) read(src *net.TCPConn, queue chan<- chunk, up bool) readEnd {
	for {
		bp := chunkPool.Get().(*[]byte)
		n, err := src.Read(*bp)
		if n > 0 && !up && l.p.losing() {
			l.p.countEvent(func(s *Stats) { s.BytesLost += int64(n) })
			n = 0
		}
		if n > 0 {
			c, ok := l.admit(bp, n)
			if !ok {
				return endFailed
			}
			select {
			case queue <- c:
			case <-l.done:
				return endFailed
			}
			if c.last {
				return endLimited
			}
		} else {
			chunkPool.Put(bp)
		}
		if errors.Is(err, io.EOF) {
			return endEOF
		}
		if err != nil {
			return endFailed
		}
	}
}

// admit waits out a blackhole, then takes n bytes from the byte budget and
// stamps the chunk with its due time.
func (l *link) admit(bp *[]byte, n int) (chunk, bool) {
	select {
	case <-l.p.gate():
	case <-l.done:
		chunkPool.Put(bp)
		return chunk{}, false
	}
	take := l.budget.take(int64(n))
	if take == 0 {
		chunkPool.Put(bp)
		l.drop()
		return chunk{}, false
	}
	return chunk{buf: bp, n: int(take), due: time.Now().Add(l.p.currentLatency()), last: take < int64(n)}, true
}

// drain writes the queued chunks to dst when due. It reports whether every
// chunk was written and the stream ended without a drop.
func (l *link) drain(queue <-chan chunk, dst *net.TCPConn, up bool) bool {
	ok := true
	for c := range queue {
		if ok {
			ok = l.write(c, dst, up)
		}
		chunkPool.Put(c.buf)
	}
	return ok
}

func (l *link) write(c chunk, dst *net.TCPConn, up bool) bool {
	if wait := time.Until(c.due); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-l.done:
			t.Stop()
			return false
		}
	}
	n, err := dst.Write((*c.buf)[:c.n])
	l.p.count(up, n)
	if err != nil {
		l.close()
		return false
	}
	if c.last {
		l.drop()
		return false
	}
	return true
}

// budget is the bytes a connection may still forward; < 0 means no limit.
type budget struct {
	mu sync.Mutex
	n  int64
}

func (b *budget) set(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n = n
}

// take grants up to want bytes.
func (b *budget) take(want int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n < 0 {
		return want
	}
	got := min(want, b.n)
	b.n -= got
	return got
}
