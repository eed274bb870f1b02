package clienttest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
)

// Front serves h behind faults: request i (from 0) is answered by
// faults[i] while faults are left, the rest by h. It records each
// request's headers.
type Front struct {
	URL    string
	mu     sync.Mutex
	faults []http.HandlerFunc
	hits   int
	heads  []http.Header
}

// NewFront starts a Front for one test.
func NewFront(t *testing.T, h http.Handler, faults ...http.HandlerFunc) *Front {
	t.Helper()
	f := &Front{faults: faults}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		i := f.hits
		f.hits++
		f.heads = append(f.heads, r.Header.Clone())
		f.mu.Unlock()
		if i < len(f.faults) {
			io.Copy(io.Discard, r.Body)
			f.faults[i](w, r)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	f.URL = hs.URL
	return f
}

// Hits returns how many requests the front received.
func (f *Front) Hits() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits
}

// Header returns the headers of request i.
func (f *Front) Header(i int) http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.heads[i]
}

// Status answers with code, a Retry-After header when retryAfter is
// set, and body as JSON.
func Status(code int, retryAfter, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// Drop closes the connection without an answer.
func Drop(w http.ResponseWriter, r *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Close()
}

// Cut answers 200 with the given content type and the start of a body,
// then closes the connection: a stream dropped midway.
func Cut(contentType, start string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: " + contentType + "\r\nTransfer-Encoding: chunked\r\n\r\n")
		buf.WriteString(chunk(start))
		buf.Flush()
	}
}

// chunk is s as one HTTP/1.1 chunk.
func chunk(s string) string {
	return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n"
}

// Block holds the request until the client goes away, after signalling
// on started.
func Block(started chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done()
	}
}
