package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentcapsule/capsule/provider/sim"
)

// demoDelay is the pause the demo puts before every model request reaches
// the simulator, so that a person can follow the transcript and so that
// the model switch and the move land while a step is in flight. It is the
// demo's, not the simulator's: the simulator answers at once.
const demoDelay = 150 * time.Millisecond

// demoEndpoint is the simulator the demo's nodes call, served in-process
// on loopback behind the demo's delay.
type demoEndpoint struct {
	sim *sim.Server
	url string
	hs  *http.Server

	mu        sync.Mutex
	arrived   int           // model requests that reached the delay
	cancelled int           // of which the caller cancelled during the delay or a hold
	gate      chan struct{} // while set, requests wait for it to close after the delay
}

// startDemoEndpoint serves a new simulator on 127.0.0.1 (a free port).
func startDemoEndpoint() (*demoEndpoint, error) {
	ln, err := sim.Listen("127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo: model endpoint: %w", err)
	}
	e := &demoEndpoint{sim: sim.New(sim.Config{}), url: "http://" + ln.Addr().String()}
	e.hs = &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = e.hs.Serve(ln) }()
	return e, nil
}

// ServeHTTP waits demoDelay and, while the demo holds requests, until it
// lets them go; then the simulator answers. A request whose caller goes
// away meanwhile (a move's freeze cancels the model call in flight) never
// reaches the simulator.
func (e *demoEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		// Read the body first: only then does the server watch the
		// connection and cancel r.Context() when the caller goes away.
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, "demo: read the request: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !e.wait(r.Context()) {
			return
		}
	}
	e.sim.ServeHTTP(w, r)
}

// wait counts a model request and holds it; it reports false when the
// caller went away.
func (e *demoEndpoint) wait(ctx context.Context) bool {
	e.mu.Lock()
	e.arrived++
	e.mu.Unlock()
	t := time.NewTimer(demoDelay)
	defer t.Stop()
	select {
	case <-t.C:
		e.mu.Lock()
		gate := e.gate
		e.mu.Unlock()
		if gate == nil {
			return true
		}
		select {
		case <-gate:
			return true
		case <-ctx.Done():
		}
	case <-ctx.Done():
	}
	e.mu.Lock()
	e.cancelled++
	e.mu.Unlock()
	return false
}

// hold makes model requests wait, after their delay, until the returned
// function lets them go: the demo holds the step in flight while it moves
// the agent, so that the move always lands in the middle of it (a real
// model would still be generating).
func (e *demoEndpoint) hold() (release func()) {
	gate := make(chan struct{})
	e.mu.Lock()
	e.gate = gate
	e.mu.Unlock()
	return func() {
		e.mu.Lock()
		e.gate = nil
		e.mu.Unlock()
		close(gate)
	}
}

// counts returns the model requests that arrived and those cancelled
// during the delay.
func (e *demoEndpoint) counts() (arrived, cancelled int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.arrived, e.cancelled
}

// Close stops the endpoint and closes its connections.
func (e *demoEndpoint) Close() error { return e.hs.Close() }

// The demo's project: a Go package whose test fails because Add subtracts.
const (
	demoBug = "return a - b"
	demoFix = "return a + b"
)

// demoTask is the agent's first user message. The planner calls the
// tools it names in the order it names them, with the key=value arguments
// written in it; read_file and edit_file take the first path it names.
var demoTask = `TestAdd fails in this Go project: Add in calc.go returns the wrong sum. ` +
	`Find the function with search pattern="func Add" glob=*.go, look at it with read_file, ` +
	`fix it with edit_file old_string="` + demoBug + `" new_string="` + demoFix + `", and tell me what you changed.`

// demoCheck is the second user message, sent on the second node: read the
// file again to check the fix.
const demoCheck = "Check the fix: read_file path=calc.go."

var demoFiles = map[string]string{
	"go.mod":    "module example.com/calc\n\ngo 1.22\n",
	"README.md": "# calc\n\nA tiny package with a bug: `go test` fails in TestAdd.\n",
	"calc.go": "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\t" + demoBug + "\n}\n\n" +
		"// Mul returns the product of a and b.\nfunc Mul(a, b int) int {\n\treturn a * b\n}\n",
	"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n" +
		"\tif got := Add(2, 3); got != 5 {\n\t\tt.Errorf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n\n" +
		"func TestMul(t *testing.T) {\n\tif got := Mul(2, 3); got != 6 {\n\t\tt.Errorf(\"Mul(2, 3) = %d, want 6\", got)\n\t}\n}\n",
}

func writeDemoWorkspace(ws string) error {
	for name, body := range demoFiles {
		p := filepath.Join(ws, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("demo: workspace: %w", err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return fmt.Errorf("demo: workspace: %w", err)
		}
	}
	return nil
}

// waitUntil polls cond until it holds, ctx is done or 30 seconds pass;
// what names the wait in the error.
func waitUntil(ctx context.Context, what string, cond func() bool) error {
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("demo: waiting for %s: %w", what, errors.New("timed out after 30s"))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("demo: waiting for %s: %w", what, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}
