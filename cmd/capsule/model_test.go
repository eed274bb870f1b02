package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/provider/sim"
)

// serveModel runs `capsule model serve ARGS --json` in-process and
// returns its first line, the lines that follow, and a stop function that
// cancels it and returns its error.
func serveModel(t *testing.T, args ...string) (serveLine, <-chan string, func() error) {
	t.Helper()
	pr, pw := io.Pipe()
	root := newRoot()
	root.SetOut(pw)
	root.SetErr(io.Discard)
	root.SetArgs(append([]string{"model", "serve", "--json"}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { err := root.ExecuteContext(ctx); pw.Close(); done <- err }()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() {
		cancel()
		t.Fatalf("model serve printed nothing: %v", <-done)
	}
	var first serveLine
	if err := json.Unmarshal(sc.Bytes(), &first); err != nil {
		t.Fatalf("first line %q: %v", sc.Text(), err)
	}
	lines := make(chan string, 64)
	go func() { // keep reading, so the server never blocks on its output
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { stop() })
	return first, lines, stop
}

func chatOnce(t *testing.T, url, content string) (int, string) {
	t.Helper()
	res, err := http.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"capsule-sim/echo","messages":[{"role":"user","content":"`+content+`"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// model serve says it is a simulator, answers on loopback, records a
// cassette when stopped, and answers from it byte for byte with --replay.
func TestModelServeRecordReplay(t *testing.T) {
	cassette := filepath.Join(t.TempDir(), "c.json")
	first, _, stop := serveModel(t, "--record", cassette)
	if !strings.Contains(first.Note, "simulator, not a language model") || !strings.HasPrefix(first.URL, "http://127.0.0.1:") || len(first.Models) != len(sim.Models) {
		t.Fatalf("first line = %+v", first)
	}
	status, want := chatOnce(t, first.URL, "hello")
	if status != 200 || !strings.Contains(want, "capsule-sim/echo: hello") {
		t.Fatalf("echo = %d %s", status, want)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	c, err := sim.LoadCassette(cassette)
	if err != nil || c.Len() != 1 {
		t.Fatalf("cassette: %v (%d entries), want 1", err, c.Len())
	}
	replay, _, _ := serveModel(t, "--replay", cassette)
	if status, got := chatOnce(t, replay.URL, "hello"); status != 200 || got != want {
		t.Fatalf("replay = %d %q, want %q", status, got, want)
	}
	if status, got := chatOnce(t, replay.URL, "other"); status != 404 || !strings.Contains(got, "no answer for request digest") {
		t.Fatalf("replay miss = %d %s", status, got)
	}
}

// Each request prints one JSON line; a refused one names its violation.
func TestModelServeRequestLines(t *testing.T) {
	first, lines, _ := serveModel(t)
	res, err := http.Post(first.URL+"/v1/messages", "application/json", strings.NewReader(
		`{"model":"capsule-sim/echo","max_tokens":10,"messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 {
		t.Fatalf("status %d, want 400", res.StatusCode)
	}
	var r sim.Request
	if err := json.Unmarshal([]byte(<-lines), &r); err != nil {
		t.Fatal(err)
	}
	if r.Seq != 1 || r.API != "anthropic" || r.Status != 400 || len(r.Violations) == 0 || !strings.Contains(r.Violations[0].Message, `Unexpected role "system"`) || r.Body != nil {
		t.Fatalf("request line = %+v, want the refused request without its body", r)
	}
}

// A non-loopback address is refused as a usage error.
func TestModelServeLoopbackOnly(t *testing.T) {
	_, errOut, code := capsuleCLI(t, "model", "serve", "--listen", "0.0.0.0:0")
	if code != exitUsage || !strings.Contains(errOut, "not loopback") {
		t.Fatalf("exit %d, %q; want a usage error", code, errOut)
	}
}
