package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// proxyLog is one model request as the proxy saw it, in Unix nanoseconds.
type proxyLog struct {
	Path      string `json:"path"`
	Arrived   int64  `json:"arrived"`   // the request's headers were read
	Upstream  int64  `json:"upstream"`  // the endpoint's response headers arrived
	FirstByte int64  `json:"firstbyte"` // the first byte was passed on, after the delay
	DelayNS   int64  `json:"delay_ns"`
	ConnReq   int64  `json:"conn_req"` // 1: the first request on its connection (a new dial)
}

// connKey marks a request's context with its connection's request count.
type connKey struct{}

func runProxy(args []string) error {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	target := fs.String("target", "", "the endpoint's root URL")
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	delay := fs.Duration("delay", 300*time.Millisecond, "how long the first byte of each response is held back")
	logPath := fs.String("log", "", "file for one JSON line per proxied request")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		return fmt.Errorf("-target %q: want the endpoint's URL", *target)
	}
	logf := os.Stderr
	if *logPath != "" {
		if logf, err = os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return fmt.Errorf("log: %w", err)
		}
	}
	p := &proxy{rp: httputil.NewSingleHostReverseProxy(u), log: json.NewEncoder(logf)}
	p.rp.FlushInterval = -1 // stream every write as it comes
	p.delay.Store(int64(*delay))
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	fmt.Printf("http://%s\n", ln.Addr())
	srv := &http.Server{Handler: p, ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, new(atomic.Int64))
	}}
	return srv.Serve(ln)
}

// proxy passes requests on to the endpoint; a POST's response waits for
// the delay before its first byte (the status line) is sent.
type proxy struct {
	rp    *httputil.ReverseProxy
	delay atomic.Int64
	mu    sync.Mutex
	log   *json.Encoder
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/chatfirst/delay" {
		d, err := time.ParseDuration(r.URL.Query().Get("d"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p.delay.Store(int64(d))
		return
	}
	if r.Method != http.MethodPost {
		p.rp.ServeHTTP(w, r)
		return
	}
	e := proxyLog{Path: r.URL.Path, Arrived: time.Now().UnixNano(), DelayNS: p.delay.Load()}
	if n, ok := r.Context().Value(connKey{}).(*atomic.Int64); ok {
		e.ConnReq = n.Add(1)
	}
	dw := &delayWriter{ResponseWriter: w, until: time.Unix(0, e.Arrived).Add(time.Duration(e.DelayNS)), e: &e}
	p.rp.ServeHTTP(dw, r)
	p.mu.Lock()
	_ = p.log.Encode(e)
	p.mu.Unlock()
}

// delayWriter holds the response's first byte back until until: the
// endpoint's time to first byte through the proxy is at least the delay
// (the endpoint's own time counts toward it).
type delayWriter struct {
	http.ResponseWriter
	until   time.Time
	e       *proxyLog
	started bool
}

func (d *delayWriter) hold() {
	if d.started {
		return
	}
	d.started = true
	d.e.Upstream = time.Now().UnixNano()
	time.Sleep(time.Until(d.until))
	d.e.FirstByte = time.Now().UnixNano()
}

func (d *delayWriter) WriteHeader(code int) {
	d.hold()
	d.ResponseWriter.WriteHeader(code)
	if f, ok := d.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (d *delayWriter) Write(b []byte) (int, error) {
	d.hold()
	return d.ResponseWriter.Write(b)
}

// Flush lets the reverse proxy flush every chunk as it arrives.
func (d *delayWriter) Flush() {
	if f, ok := d.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
