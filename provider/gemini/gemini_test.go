package gemini_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/provider/gemini"
	"github.com/agentcapsule/capsule/provider/internal/clienttest"
	"github.com/agentcapsule/capsule/provider/sim"
	"github.com/agentcapsule/capsule/render"
)

func loop(streamed bool, ask string) clienttest.Loop {
	return clienttest.Loop{API: render.Gemini, Client: &gemini.Client{NoStream: !streamed}, Ask: ask,
		Base: func(root string) string { return root }, Stream: streamed,
		Sent: func(b []byte) []byte { return b }}
}

// A two-call tool loop, streamed and whole: every request is the
// rendered bytes, the thought signatures the simulator issued come back
// on the first call of each turn and on the final text, and the answer
// cites both results.
func TestToolLoop(t *testing.T) {
	for _, streamed := range []bool{true, false} {
		t.Run(map[bool]string{true: "stream", false: "whole"}[streamed], func(t *testing.T) {
			res := loop(streamed, "").Run(t)
			clienttest.WantAnswer(t, res.Answer)
			if len(res.Responses) != 3 {
				t.Fatalf("%d calls, want 3", len(res.Responses))
			}
			for i, r := range res.Responses {
				if r.StopReason != "STOP" {
					t.Errorf("call %d: stop reason %q, want STOP", i, r.StopReason)
				}
				switch b := r.Events[0].Body.(type) {
				case journal.ToolCall:
					if b.Signature == "" || b.CallID != gemini.CallID(b.Step, 0) {
						t.Errorf("call %d: first call %+v, want a signature and the step's call ID", i, b)
					}
				case journal.AssistantMessage:
					if b.Signature == "" || b.StopReason != "STOP" || i != 2 {
						t.Errorf("call %d: text %+v, want the signed final answer", i, b)
					}
				default:
					t.Errorf("call %d: first output %+v", i, r.Events[0])
				}
			}
		})
	}
}

// Parallel calls come back as several ToolCall outputs of one response;
// only the first is signed, as Gemini signs them.
func TestParallelCalls(t *testing.T) {
	res := loop(true, clienttest.AskParallel).Run(t)
	clienttest.WantAnswer(t, res.Answer)
	var calls []journal.ToolCall
	for _, o := range res.Responses[0].Events {
		if c, ok := o.Body.(journal.ToolCall); ok {
			calls = append(calls, c)
		}
	}
	if len(calls) != 2 || calls[0].Name != "read_file" || calls[1].Name != "search" ||
		calls[0].CallID == calls[1].CallID || calls[0].Signature == "" || calls[1].Signature != "" {
		t.Fatalf("first response calls = %+v, want read_file (signed) and search", calls)
	}
}

func firstRequest(t *testing.T, base string) *provider.Request {
	t.Helper()
	return clienttest.FirstRequest(t, render.Gemini, base)
}

const busy = `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`

// 429 with Retry-After (1 s streamed, 0 whole), 503, a dropped connection, then the
// simulator: the call succeeds on its fourth attempt.
func TestRetries(t *testing.T) {
	retryAfter := map[bool]string{true: "1", false: "0"}
	for _, streamed := range []bool{true, false} {
		f := clienttest.NewFront(t, sim.New(sim.Config{}), clienttest.Status(429, retryAfter[streamed], busy),
			clienttest.Status(503, "", `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`), clienttest.Drop)
		req := firstRequest(t, f.URL)
		req.Retry = clienttest.FastRetry
		resp, err := (&gemini.Client{NoStream: !streamed}).Call(context.Background(), req)
		if err != nil {
			t.Fatalf("stream %v: %v", streamed, err)
		}
		if resp.Attempts != 4 || f.Hits() != 4 {
			t.Errorf("stream %v: attempts %d, hits %d, want 4", streamed, resp.Attempts, f.Hits())
		}
	}
}

// A Retry-After beyond what the Retry allows ends the call with
// Gemini's error and the delay it asked for.
func TestRetryAfterTooLong(t *testing.T) {
	f := clienttest.NewFront(t, sim.New(sim.Config{}), clienttest.Status(429, "7", busy))
	req := firstRequest(t, f.URL)
	req.Retry = clienttest.FastRetry
	_, err := gemini.New(nil).Call(context.Background(), req)
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Status != 429 || pe.RetryAfter != 7*time.Second || pe.Type != "RESOURCE_EXHAUSTED" ||
		!strings.HasPrefix(pe.Message, "Resource has been exhausted") || !errors.Is(err, provider.ErrUnavailable) || f.Hits() != 1 {
		t.Fatalf("err = %#v (hits %d), want a 429 with Retry-After 7s after one attempt", err, f.Hits())
	}
}

// An SSE stream cut before a chunk with a finish reason is a dropped
// connection: retried, and unavailable when no attempt is left.
func TestStreamCut(t *testing.T) {
	start := `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]},"index":0}]}` + "\n\n"
	f := clienttest.NewFront(t, sim.New(sim.Config{}), clienttest.Cut("text/event-stream", start))
	req := firstRequest(t, f.URL)
	req.Retry = clienttest.FastRetry
	resp, err := gemini.New(nil).Call(context.Background(), req)
	if err != nil || resp.Attempts != 2 {
		t.Fatalf("resp %+v, err %v: want success on the second attempt", resp, err)
	}
	req.Retry.Attempts = 1
	f = clienttest.NewFront(t, sim.New(sim.Config{}), clienttest.Cut("text/event-stream", start))
	req.BaseURL = f.URL
	if _, err := gemini.New(nil).Call(context.Background(), req); !errors.Is(err, provider.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable for a cut stream", err)
	}
}

// A function call turn with no function response after it is refused:
// a 400 with Gemini's message, not retried.
func TestRefused(t *testing.T) {
	for _, streamed := range []bool{true, false} {
		s := sim.New(sim.Config{})
		f := clienttest.NewFront(t, s)
		req := firstRequest(t, f.URL)
		req.Body = []byte(`{"contents":[{"role":"user","parts":[{"text":"read it"}]},` +
			`{"role":"model","parts":[{"functionCall":{"name":"read_file","args":{"path":"a"}},"thoughtSignature":"skip_thought_signature_validator"}]},` +
			`{"role":"user","parts":[{"text":"go on"}]}],` +
			`"tools":[{"functionDeclarations":[{"name":"read_file","parametersJsonSchema":{"type":"object"}}]}]}`)
		req.Retry = clienttest.FastRetry
		_, err := (&gemini.Client{NoStream: !streamed}).Call(context.Background(), req)
		clienttest.WantRefused(t, err, s, f)
	}
}

// Cancelling the context stops a call the server holds.
func TestCancel(t *testing.T) {
	started := make(chan struct{}, 1)
	f := clienttest.NewFront(t, sim.New(sim.Config{}), clienttest.Block(started))
	clienttest.WantCancel(t, gemini.New(nil), firstRequest(t, f.URL), started)
}

// The key goes in x-goog-api-key, never in the URL or an error.
func TestKeyNotInError(t *testing.T) {
	const key = "AIza-distinctive-4711"
	f := clienttest.NewFront(t, sim.New(sim.Config{}),
		clienttest.Status(401, "", `{"error":{"code":401,"message":"API key not valid.","status":"UNAUTHENTICATED"}}`))
	req := firstRequest(t, f.URL)
	req.Key = key
	_, err := gemini.New(nil).Call(context.Background(), req)
	if err == nil || strings.Contains(err.Error(), key) || !errors.Is(err, provider.ErrRefused) {
		t.Fatalf("err = %v, want a refusal without the key", err)
	}
	if got := f.Header(0).Get("X-Goog-Api-Key"); got != key {
		t.Errorf("x-goog-api-key = %q, want the key", got)
	}
}
