package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/internal/nodeproc"
	"github.com/agentcapsule/capsule/provider/sim"
)

// The embedded model endpoint as a real process (`capsule model serve`),
// and a proxy in the test process in front of it that can hold a model
// call in flight while the test kills the node that made it.

// simProc is a running `capsule model serve`.
type simProc struct {
	url string
	cmd *exec.Cmd
}

// startSim runs `capsule model serve --listen 127.0.0.1:0 --json` until
// the test ends and returns it once its first line names its URL.
func startSim(t *testing.T) *simProc {
	t.Helper()
	cmd := exec.Command(capsuleBin, "model", "serve", "--listen", "127.0.0.1:0", "--json")
	nodeproc.DieWithParent(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	first := make(chan string, 1)
	go func() {
		br := bufio.NewReader(out)
		line, _ := br.ReadString('\n')
		first <- line
		_, _ = br.WriteTo(discard{}) // one line per request follows
	}()
	var line struct{ URL string }
	select {
	case l := <-first:
		if err := json.Unmarshal([]byte(l), &line); err != nil || line.URL == "" {
			t.Fatalf("capsule model serve: first line %q: %v", l, err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("capsule model serve printed no address within 15 s")
	}
	return &simProc{url: line.URL, cmd: cmd}
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// requests returns the simulator's request log (GET /capsule-sim/requests).
func (s *simProc) requests(t *testing.T) []sim.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/capsule-sim/requests", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("simulator request log: %v", err)
	}
	defer resp.Body.Close()
	var out []sim.Request
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("simulator request log: %v", err)
	}
	return out
}

// refused lists every request of the log the simulator did not answer
// 200 or found a rule of its provider broken in; a request whose body
// never arrived whole (its node was killed while sending it) is not one.
func refused(log []sim.Request) []string {
	var out []string
	for _, r := range log {
		if torn(r) {
			continue
		}
		if r.Status != http.StatusOK || len(r.Violations) > 0 {
			out = append(out, fmt.Sprintf("request %d (%s %s %s): status %d, violations %+v", r.Seq, r.API, r.Model, r.Path, r.Status, r.Violations))
		}
	}
	return out
}

// holdProxy is a reverse proxy to the simulator that can hold the next
// model call (a POST) before forwarding it, until released or until the
// caller goes away (a killed node).
type holdProxy struct {
	srv *httptest.Server
	rp  *httputil.ReverseProxy

	mu      sync.Mutex
	armed   bool
	arrived chan struct{} // closed when the armed hold caught a request
	release chan struct{} // closed to let it through
	dropped chan struct{} // closed when the held request's caller went away
	calls   int           // POSTs received
}

func newHoldProxy(t *testing.T, target string) *holdProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	h := &holdProxy{rp: httputil.NewSingleHostReverseProxy(u)}
	h.rp.FlushInterval = -1 // streamed answers pass as they come
	h.srv = httptest.NewServer(h)
	t.Cleanup(h.close)
	return h
}

func (h *holdProxy) url() string { return h.srv.URL }

// hold arms the proxy: the next POST waits. It returns a channel closed
// once that request arrived.
func (h *holdProxy) hold() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.armed, h.arrived, h.release, h.dropped = true, make(chan struct{}), make(chan struct{}), make(chan struct{})
	return h.arrived
}

// gone returns a channel closed once the caller of the held request went
// away without the request being let go.
func (h *holdProxy) gone() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dropped
}

// letGo releases the held request, if any, and disarms the proxy.
func (h *holdProxy) letGo() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.release != nil {
		close(h.release)
		h.release = nil
	}
	h.armed = false
}

func (h *holdProxy) posts() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

func (h *holdProxy) close() {
	h.letGo()
	h.srv.CloseClientConnections()
	h.srv.Close()
}

func (h *holdProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		h.mu.Lock()
		h.calls++
		armed, arrived, release, dropped := h.armed, h.arrived, h.release, h.dropped
		h.armed = false
		h.mu.Unlock()
		if armed {
			// Read the body first: only then does the server watch the
			// connection and cancel the request's context when the
			// caller dies.
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			close(arrived)
			select {
			case <-release:
			case <-r.Context().Done():
				close(dropped) // the caller died: the simulator never sees it
				return
			}
		}
	}
	h.rp.ServeHTTP(w, r)
}

// modelEndpointArgs points every node at the proxy.
func (h *holdProxy) nodeArgs() []string {
	return []string{"--model-endpoint", h.url()}
}

// simArg renders a value for the planner's name=value syntax.
func simArg(name, value string) string {
	if strings.ContainsAny(value, " \t\"") {
		return fmt.Sprintf("%s=%q", name, value)
	}
	return name + "=" + value
}

// torn reports whether the simulator could not read the request's body to
// its end because the caller went away mid-request (the simulator answers
// 400; a body too large is 413, and is not torn).
func torn(r sim.Request) bool {
	if len(r.Violations) != 1 {
		return false
	}
	m := r.Violations[0].Message
	return strings.HasPrefix(m, "capsule-sim: read request: ") && (strings.Contains(m, "EOF") || strings.Contains(m, "connection reset"))
}

// tornCount counts the requests of the log whose body was cut.
func tornCount(log []sim.Request) int {
	n := 0
	for _, r := range log {
		if torn(r) {
			n++
		}
	}
	return n
}
