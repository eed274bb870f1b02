package anthropic_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/provider/anthropic"
	"github.com/agentcapsule/capsule/provider/internal/clienttest"
	"github.com/agentcapsule/capsule/provider/sim"
	"github.com/agentcapsule/capsule/render"
)

// withStream is the body a streaming request sends: the rendered object
// with "stream":true added at its end.
func withStream(b []byte) []byte {
	return append(append(bytes.TrimSuffix(b, []byte("}")), `,"stream":true`...), '}')
}

func loop(streamed bool, ask string) clienttest.Loop {
	l := clienttest.Loop{API: render.Anthropic, Client: &anthropic.Client{NoStream: !streamed}, Ask: ask,
		Base: func(root string) string { return root }, Stream: streamed,
		Sent: func(b []byte) []byte { return b }}
	if streamed {
		l.Sent = withStream
	}
	return l
}

// A two-call tool loop, streamed and whole: every request is the
// rendered bytes, the simulator accepts the thinking signatures replayed
// from the journal, and the answer cites both results.
func TestToolLoop(t *testing.T) {
	for _, streamed := range []bool{true, false} {
		t.Run(map[bool]string{true: "stream", false: "whole"}[streamed], func(t *testing.T) {
			res := loop(streamed, "").Run(t)
			clienttest.WantAnswer(t, res.Answer)
			if len(res.Responses) != 3 {
				t.Fatalf("%d calls, want 3", len(res.Responses))
			}
			for i, r := range res.Responses {
				th, ok := r.Events[0].Body.(journal.Reasoning)
				if !ok || th.Text == "" || th.Signature == "" {
					t.Errorf("call %d: first output %+v, want signed thinking", i, r.Events[0])
				}
			}
			wantStops(t, res.Responses, "tool_use", "tool_use", "end_turn")
			last := res.Responses[2].Events
			if m, ok := last[len(last)-2].Body.(journal.AssistantMessage); !ok || m.StopReason != "end_turn" {
				t.Errorf("final text %+v, want stop_reason end_turn", last[len(last)-2])
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

func wantStops(t *testing.T, rs []*provider.Response, want ...string) {
	t.Helper()
	for i, r := range rs {
		if r.StopReason != want[i] {
			t.Errorf("call %d: stop reason %q, want %q", i, r.StopReason, want[i])
		}
	}
}

// firstRequest renders the opening request of a loop.
func firstRequest(t *testing.T, base string) *provider.Request {
	t.Helper()
	return clienttest.FirstRequest(t, render.Anthropic, base)
}

// 429 with Retry-After (1 s streamed, 0 whole), then 503, then the simulator: the call succeeds
// on its third attempt with the SDK's own retries off.
func TestRetries(t *testing.T) {
	retryAfter := map[bool]string{true: "1", false: "0"}
	busy := `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`
	for _, streamed := range []bool{true, false} {
		f := clienttest.NewFront(t, sim.New(sim.Config{}), clienttest.Status(429, retryAfter[streamed], busy),
			clienttest.Status(503, "", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
			clienttest.Drop)
		req := firstRequest(t, f.URL)
		req.Retry = clienttest.FastRetry
		resp, err := (&anthropic.Client{NoStream: !streamed}).Call(context.Background(), req)
		if err != nil {
			t.Fatalf("stream %v: %v", streamed, err)
		}
		if resp.Attempts != 4 || f.Hits() != 4 {
			t.Errorf("stream %v: attempts %d, hits %d, want 4", streamed, resp.Attempts, f.Hits())
		}
	}
}

// A Retry-After beyond what the Retry allows ends the call with the
// provider's error and the delay it asked for.
func TestRetryAfterTooLong(t *testing.T) {
	f := clienttest.NewFront(t, sim.New(sim.Config{}),
		clienttest.Status(429, "7", `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`))
	req := firstRequest(t, f.URL)
	req.Retry = clienttest.FastRetry
	_, err := anthropic.New(nil).Call(context.Background(), req)
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Status != 429 || pe.RetryAfter != 7*time.Second || pe.Message != "slow down" ||
		pe.Type != "rate_limit_error" || !errors.Is(err, provider.ErrUnavailable) || f.Hits() != 1 {
		t.Fatalf("err = %#v (hits %d), want a 429 with Retry-After 7s after one attempt", err, f.Hits())
	}
}

// A stream cut before message_stop is a dropped connection: retried.
func TestStreamCut(t *testing.T) {
	start := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"
	f := clienttest.NewFront(t, sim.New(sim.Config{}), clienttest.Cut("text/event-stream", start))
	req := firstRequest(t, f.URL)
	req.Retry = clienttest.FastRetry
	resp, err := anthropic.New(nil).Call(context.Background(), req)
	if err != nil || resp.Attempts != 2 {
		t.Fatalf("resp %+v, err %v: want success on the second attempt", resp, err)
	}
	req.Retry.Attempts = 1
	f = clienttest.NewFront(t, sim.New(sim.Config{}), clienttest.Cut("text/event-stream", start))
	req.BaseURL = f.URL
	if _, err := anthropic.New(nil).Call(context.Background(), req); !errors.Is(err, provider.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable for a cut stream", err)
	}
}

// A body with a tool_use and no tool_result is refused: a 400 with
// Anthropic's message, not retried.
func TestRefused(t *testing.T) {
	s := sim.New(sim.Config{})
	f := clienttest.NewFront(t, s)
	req := firstRequest(t, f.URL)
	req.Body = []byte(`{"model":"capsule-sim/planner","max_tokens":1024,"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"read it"}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"a"}}]},` +
		`{"role":"user","content":[{"type":"text","text":"go on"}]}],` +
		`"tools":[{"name":"read_file","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}}]}`)
	req.Retry = clienttest.FastRetry
	_, err := anthropic.New(nil).Call(context.Background(), req)
	clienttest.WantRefused(t, err, s, f)
}

// Cancelling the context stops a call the server holds.
func TestCancel(t *testing.T) {
	started := make(chan struct{}, 1)
	f := clienttest.NewFront(t, sim.New(sim.Config{}), clienttest.Block(started))
	req := firstRequest(t, f.URL)
	clienttest.WantCancel(t, anthropic.New(nil), req, started)
}

// The key goes in x-api-key and never into an error.
func TestKeyNotInError(t *testing.T) {
	const key = "sk-ant-distinctive-4711"
	f := clienttest.NewFront(t, sim.New(sim.Config{}),
		clienttest.Status(401, "", `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
	req := firstRequest(t, f.URL)
	req.Key = key
	_, err := anthropic.New(nil).Call(context.Background(), req)
	if err == nil || strings.Contains(err.Error(), key) || !errors.Is(err, provider.ErrRefused) {
		t.Fatalf("err = %v, want a refusal without the key", err)
	}
	if got := f.Header(0).Get("X-Api-Key"); got != key {
		t.Errorf("x-api-key = %q, want the key", got)
	}
	if got := f.Header(0).Get("Anthropic-Version"); got == "" {
		t.Errorf("no anthropic-version header")
	}
}

// An error event inside a 200 stream (overloaded_error) is retried like
// the 529 it stands for.
func TestStreamErrorEvent(t *testing.T) {
	overloaded := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
	}
	f := clienttest.NewFront(t, sim.New(sim.Config{}), overloaded)
	req := firstRequest(t, f.URL)
	req.Retry = clienttest.FastRetry
	resp, err := anthropic.New(nil).Call(context.Background(), req)
	if err != nil || resp.Attempts != 2 {
		t.Fatalf("resp %+v, err %v: want success on the second attempt", resp, err)
	}
	req.Retry.Attempts = 1
	f = clienttest.NewFront(t, sim.New(sim.Config{}), overloaded)
	req.BaseURL = f.URL
	_, err = anthropic.New(nil).Call(context.Background(), req)
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Status != 529 || pe.Message != "Overloaded" {
		t.Fatalf("err = %v, want the overloaded error as a 529", err)
	}
}

// With no key in the request, none is sent: the SDK's environment
// defaults (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL) are not read.
func TestNoEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	f := clienttest.NewFront(t, sim.New(sim.Config{}))
	req := firstRequest(t, f.URL)
	if _, err := anthropic.New(nil).Call(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := f.Header(0).Get("X-Api-Key"); got != "" {
		t.Errorf("x-api-key = %q, want none", got)
	}
}
