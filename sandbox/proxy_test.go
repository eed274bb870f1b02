//go:build linux

package sandbox

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// server is a loopback HTTP server standing for a host on the internet; it
// counts the requests that reach it.
type server struct {
	*httptest.Server
	hits atomic.Int32
	host string // host:port
}

func newServer(t *testing.T, body string) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(s.Close)
	s.host = strings.TrimPrefix(s.URL, "http://")
	return s
}

// TestHosts runs curl inside each kind of sandbox with network "hosts": the
// listed host answers through the proxy; a host not listed is refused by
// the proxy; a direct connection, bypassing the proxy, does not get out.
// Each check runs once more with network "none" or unsandboxed, where the
// outcome differs, so the check is not vacuous.
func TestHosts(t *testing.T) {
	for kind, s := range sandboxes(t) {
		t.Run(kind, func(t *testing.T) {
			allowed, other := newServer(t, "hello-allowed"), newServer(t, "hello-other")
			p := Policy{Workspace: t.TempDir(), Network: NetworkHosts, Hosts: []string{allowed.host}}
			curl := func(p Policy, url string, flags string) outcome {
				return sh(t, s, p, "curl -sS --max-time 10 "+flags+" "+url)
			}
			if o := curl(p, allowed.URL, "-p"); o.stdout != "hello-allowed" || allowed.hits.Load() != 1 {
				t.Errorf("listed host through the proxy: exit %d, stdout %q, stderr %q, hits %d", o.exit, o.stdout, o.stderr, allowed.hits.Load())
			}
			if o := curl(Policy{Workspace: p.Workspace}, allowed.URL, ""); o.exit == 0 || allowed.hits.Load() != 1 {
				t.Errorf("network none reached the listed host: exit %d, stdout %q", o.exit, o.stdout)
			}
			if o := curl(p, other.URL, "-p"); o.exit == 0 || other.hits.Load() != 0 || !strings.Contains(o.stderr, "403") {
				t.Errorf("unlisted host: exit %d, stdout %q, stderr %q, hits %d", o.exit, o.stdout, o.stderr, other.hits.Load())
			}
			if o := curl(p, allowed.URL, "--noproxy '*'"); o.exit == 0 || allowed.hits.Load() != 1 {
				t.Errorf("direct connection got out: exit %d, stdout %q, hits %d", o.exit, o.stdout, allowed.hits.Load())
			}
			p.Unsandboxed = true
			o := curl(p, allowed.URL, "--noproxy '*'")
			t.Logf("direct: exit %d, stderr %q", o.exit, o.stderr)
			if o := curl(p, allowed.URL, "--noproxy '*'"); o.stdout != "hello-allowed" {
				t.Errorf("the direct connection fails even unsandboxed, so the check proves nothing: %+v", o)
			}
		})
	}
}

// The proxy answers a CONNECT to a listed host with 200 and a tunnel, and
// refuses everything else without dialing.
func TestProxy(t *testing.T) {
	allowed, other := newServer(t, "a"), newServer(t, "b")
	px, err := NewProxy([]string{strings.ToUpper(allowed.host)}, "")
	must(t, err)
	defer px.Close()
	for _, tc := range []struct{ req, wantStatus string }{
		{"CONNECT " + allowed.host + " HTTP/1.1\r\nHost: " + allowed.host + "\r\n\r\n", "HTTP/1.1 200"},
		{"CONNECT " + other.host + " HTTP/1.1\r\nHost: " + other.host + "\r\n\r\n", "HTTP/1.1 403"},
		{"GET " + allowed.URL + "/ HTTP/1.1\r\nHost: " + allowed.host + "\r\n\r\n", "HTTP/1.1 405"},
	} {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", px.Port()))
		must(t, err)
		fmt.Fprint(c, tc.req)
		line, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if err != nil || !strings.HasPrefix(line, tc.wantStatus) {
			t.Errorf("%q: got %q (%v), want %s", tc.req, line, err, tc.wantStatus)
		}
	}
	if other.hits.Load() != 0 || allowed.hits.Load() != 0 {
		t.Errorf("hits: allowed %d, other %d; want none (no request went through a tunnel)", allowed.hits.Load(), other.hits.Load())
	}
	if _, err := NewProxy([]string{"no-port"}, ""); err == nil {
		t.Errorf("a host without a port was accepted")
	}
}
