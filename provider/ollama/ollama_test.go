package ollama_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/provider/internal/clienttest"
	"github.com/agentcapsule/capsule/provider/ollama"
	"github.com/agentcapsule/capsule/provider/sim"
	"github.com/agentcapsule/capsule/render"
)

// thinking is the capabilities of a local model that thinks on request.
var thinking = &render.Caps{ContextWindow: 32768, MaxOutput: 4096, Thinking: render.ThinkingOptional}

func loop(streamed bool, ask string) clienttest.Loop {
	return clienttest.Loop{API: render.Ollama, Client: &ollama.Client{NoStream: !streamed}, Ask: ask,
		Base: func(root string) string { return root }, Stream: streamed, Caps: thinking,
		Sent: func(b []byte) []byte {
			if !streamed {
				return b
			}
			// The renderer writes "stream":false after the messages; a
			// stream flips that one value.
			i := bytes.LastIndex(b, []byte(`"stream":false`))
			return append(append(append([]byte(nil), b[:i]...), `"stream":true`...), b[i+len(`"stream":false`):]...)
		}}
}

// A two-call tool loop, streamed and whole: every request is the
// rendered bytes (the stream switch aside), the thinking is journaled,
// and the answer cites both results.
func TestToolLoop(t *testing.T) {
	for _, streamed := range []bool{true, false} {
		t.Run(map[bool]string{true: "stream", false: "whole"}[streamed], func(t *testing.T) {
			res := loop(streamed, "").Run(t)
			clienttest.WantAnswer(t, res.Answer)
			if len(res.Responses) != 3 {
				t.Fatalf("%d calls, want 3", len(res.Responses))
			}
			for i, r := range res.Responses {
				if th, ok := r.Events[0].Body.(journal.Reasoning); !ok || th.Text == "" {
					t.Errorf("call %d: first output %+v, want thinking", i, r.Events[0])
				}
				if r.StopReason != "stop" {
					t.Errorf("call %d: stop reason %q, want Ollama's stop", i, r.StopReason)
				}
			}
		})
	}
}

// Parallel calls come back as several ToolCall outputs of one response.
func TestParallelCalls(t *testing.T) {
	res := loop(true, clienttest.AskParallel).Run(t)
	clienttest.WantAnswer(t, res.Answer)
	var calls []journal.ToolCall
	for _, o := range res.Responses[0].Events {
		if c, ok := o.Body.(journal.ToolCall); ok {
			calls = append(calls, c)
		}
	}
	if len(calls) != 2 || calls[0].Name != "read_file" || calls[1].Name != "search" || calls[0].CallID == calls[1].CallID {
		t.Fatalf("first response calls = %+v, want read_file and search", calls)
	}
}

func firstRequest(t *testing.T, base string) *provider.Request {
	t.Helper()
	return clienttest.FirstRequest(t, render.Ollama, base)
}

// 429 with Retry-After (1 s streamed, 0 whole), 503, a dropped connection, then the
// simulator: the call succeeds on its fourth attempt.
func TestRetries(t *testing.T) {
	retryAfter := map[bool]string{true: "1", false: "0"}
	for _, streamed := range []bool{true, false} {
		f := clienttest.NewFront(t, sim.New(sim.Config{}), clienttest.Status(429, retryAfter[streamed], `{"error":"too many requests"}`),
			clienttest.Status(503, "", `{"error":"server busy"}`), clienttest.Drop)
		req := firstRequest(t, f.URL)
		req.Retry = clienttest.FastRetry
		resp, err := (&ollama.Client{NoStream: !streamed}).Call(context.Background(), req)
		if err != nil {
			t.Fatalf("stream %v: %v", streamed, err)
		}
		if resp.Attempts != 4 || f.Hits() != 4 {
			t.Errorf("stream %v: attempts %d, hits %d, want 4", streamed, resp.Attempts, f.Hits())
		}
	}
}

// A Retry-After beyond what the Retry allows ends the call with the
// server's error and the delay it asked for.
func TestRetryAfterTooLong(t *testing.T) {
	f := clienttest.NewFront(t, sim.New(sim.Config{}), clienttest.Status(429, "7", `{"error":"too many requests"}`))
	req := firstRequest(t, f.URL)
	req.Retry = clienttest.FastRetry
	_, err := ollama.New(nil).Call(context.Background(), req)
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Status != 429 || pe.RetryAfter != 7*time.Second || pe.Message != "too many requests" ||
		!errors.Is(err, provider.ErrUnavailable) || f.Hits() != 1 {
		t.Fatalf("err = %#v (hits %d), want a 429 with Retry-After 7s after one attempt", err, f.Hits())
	}
}

// An NDJSON stream cut before its done line is a dropped connection:
// retried, and unavailable when no attempt is left.
func TestStreamCut(t *testing.T) {
	start := `{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"Hel"},"done":false}` + "\n"
	f := clienttest.NewFront(t, sim.New(sim.Config{}), clienttest.Cut("application/x-ndjson", start))
	req := firstRequest(t, f.URL)
	req.Retry = clienttest.FastRetry
	resp, err := ollama.New(nil).Call(context.Background(), req)
	if err != nil || resp.Attempts != 2 {
		t.Fatalf("resp %+v, err %v: want success on the second attempt", resp, err)
	}
	req.Retry.Attempts = 1
	f = clienttest.NewFront(t, sim.New(sim.Config{}), clienttest.Cut("application/x-ndjson", start))
	req.BaseURL = f.URL
	if _, err := ollama.New(nil).Call(context.Background(), req); !errors.Is(err, provider.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable for a cut stream", err)
	}
}

// A body with a tool call and no tool message is refused: a 400 with
// Ollama's message, not retried.
func TestRefused(t *testing.T) {
	for _, streamed := range []bool{true, false} {
		s := sim.New(sim.Config{})
		f := clienttest.NewFront(t, s)
		req := firstRequest(t, f.URL)
		req.Body = []byte(`{"model":"capsule-sim/planner","messages":[{"role":"user","content":"read it"},` +
			`{"role":"assistant","content":"","tool_calls":[{"id":"call_1","function":{"index":0,"name":"read_file","arguments":{"path":"a"}}}]},` +
			`{"role":"user","content":"go on"}],"stream":false}`)
		req.Retry = clienttest.FastRetry
		_, err := (&ollama.Client{NoStream: !streamed}).Call(context.Background(), req)
		clienttest.WantRefused(t, err, s, f)
	}
}

// Cancelling the context stops a call the server holds.
func TestCancel(t *testing.T) {
	started := make(chan struct{}, 1)
	f := clienttest.NewFront(t, sim.New(sim.Config{}), clienttest.Block(started))
	clienttest.WantCancel(t, ollama.New(nil), firstRequest(t, f.URL), started)
}

// The key goes in Authorization and never into an error.
func TestKeyNotInError(t *testing.T) {
	const key = "ollama-distinctive-4711"
	f := clienttest.NewFront(t, sim.New(sim.Config{}), clienttest.Status(401, "", `{"error":"unauthorized"}`))
	req := firstRequest(t, f.URL)
	req.Key = key
	_, err := ollama.New(nil).Call(context.Background(), req)
	if err == nil || strings.Contains(err.Error(), key) || !errors.Is(err, provider.ErrRefused) {
		t.Fatalf("err = %v, want a refusal without the key", err)
	}
	if got := f.Header(0).Get("Authorization"); got != "Bearer "+key {
		t.Errorf("Authorization = %q, want the key", got)
	}
}

// An error line inside a 200 answer (the runner failed while
// generating) ends the attempt with its message; it is retried.
func TestErrorLine(t *testing.T) {
	failed := clienttest.Status(200, "", `{"error":"llama runner process has terminated"}`+"\n")
	f := clienttest.NewFront(t, sim.New(sim.Config{}), failed)
	req := firstRequest(t, f.URL)
	req.Retry = clienttest.FastRetry
	if resp, err := ollama.New(nil).Call(context.Background(), req); err != nil || resp.Attempts != 2 {
		t.Fatalf("resp %+v, err %v: want success on the second attempt", resp, err)
	}
	req.Retry.Attempts = 1
	f = clienttest.NewFront(t, sim.New(sim.Config{}), failed)
	req.BaseURL = f.URL
	_, err := ollama.New(nil).Call(context.Background(), req)
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Message != "llama runner process has terminated" || !errors.Is(err, provider.ErrUnavailable) {
		t.Fatalf("err = %v, want the runner's error, unavailable", err)
	}
}

// OLLAMA_AUTH does not make the client read a signing key from
// ~/.ollama (the official client would, and fail without one): only
// Request.Key is sent.
func TestNoKeyFile(t *testing.T) {
	t.Setenv("OLLAMA_AUTH", "1")
	t.Setenv("HOME", t.TempDir())
	f := clienttest.NewFront(t, sim.New(sim.Config{}))
	if _, err := ollama.New(nil).Call(context.Background(), firstRequest(t, f.URL)); err != nil {
		t.Fatal(err)
	}
	if got := f.Header(0).Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q, want none without a key", got)
	}
}
