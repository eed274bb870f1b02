package openai_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/provider/openai"
	"github.com/agentcapsule/capsule/provider/sim"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/render/wire"
)

// tinyRetry keeps retry tests fast; the waits are recorded, not taken.
var tinyRetry = provider.Retry{Attempts: 4, Base: time.Millisecond, Max: 4 * time.Millisecond, MaxRetryAfter: 5 * time.Second}

// firstRequest renders the opening request of the planner's loop.
func firstRequest(t *testing.T, api render.API, base string) *provider.Request {
	t.Helper()
	tg := target(api)
	c := newConvo(t, tg, loopRequest)
	body, _, err := wire.Render(c.events, tg)
	if err != nil {
		t.Fatal(err)
	}
	return &provider.Request{API: api, Model: tg.Model, Producer: tg.Producer(), Step: "s1", Body: body,
		BaseURL: base, Retry: tinyRetry}
}

// recorder is a client whose waits between attempts are recorded.
type recorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (r *recorder) client(api render.API, stream bool) *openai.Client {
	c := &openai.Client{API: api, NoStream: !stream}
	openai.SetSleep(c, func(_ context.Context, d time.Duration) error {
		r.mu.Lock()
		r.waits = append(r.waits, d)
		r.mu.Unlock()
		return nil
	})
	return c
}

// faulty serves the simulator behind a handler that fails the first n
// requests with fail.
func faulty(t *testing.T, n int, fail http.HandlerFunc) (*sim.Server, string, *atomic.Int32) {
	s := sim.New(sim.Config{})
	var seen atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if int(seen.Add(1)) <= n {
			fail(w, r)
			return
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return s, hs.URL + "/v1", &seen
}

func status(code int, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":{"message":"busy %d","type":"server_error","param":null,"code":null}}`, code)
	}
}

// hangUp drops the connection without an answer.
func hangUp(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// cutStream starts an SSE answer and drops the connection mid-stream.
func cutStream(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}\n\n"+
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"par\"}\n\n")
	w.(http.Flusher).Flush()
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// 429 and 503 answers and dropped connections are retried, the wait
// being the Retry-After the provider sent, else the backoff; the call
// then succeeds against the simulator.
func TestRetries(t *testing.T) {
	cases := []struct {
		name      string
		n         int
		fail      http.HandlerFunc
		wantWaits []time.Duration
	}{
		{"429 Retry-After 0", 2, status(429, "Retry-After", "0"), []time.Duration{time.Millisecond, 2 * time.Millisecond}},
		{"429 Retry-After 1", 1, status(429, "Retry-After", "1"), []time.Duration{time.Second}},
		{"503", 3, status(503), []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond}},
		{"hang up", 1, hangUp, []time.Duration{time.Millisecond}},
		{"cut stream", 2, cutStream, []time.Duration{time.Millisecond, 2 * time.Millisecond}},
	}
	for _, api := range []render.API{render.OpenAIChat, render.OpenAIResponses} {
		for _, tc := range cases {
			t.Run(string(api)+"/"+tc.name, func(t *testing.T) {
				s, base, seen := faulty(t, tc.n, tc.fail)
				var r recorder
				resp, err := r.client(api, true).Call(context.Background(), firstRequest(t, api, base))
				if err != nil {
					t.Fatalf("call: %v", err)
				}
				if resp.Attempts != tc.n+1 || int(seen.Load()) != tc.n+1 || len(s.Requests()) != 1 {
					t.Errorf("attempts %d, requests %d, simulator %d; want %d, %d, 1", resp.Attempts, seen.Load(), len(s.Requests()), tc.n+1, tc.n+1)
				}
				if fmt.Sprint(r.waits) != fmt.Sprint(tc.wantWaits) {
					t.Errorf("waits %v, want %v", r.waits, tc.wantWaits)
				}
				if countKind(resp, journal.KindToolCall) != 1 {
					t.Errorf("events %+v, want the planner's first call", resp.Events)
				}
			})
		}
	}
}

// Retries are bounded: a provider that stays unavailable ends the call
// with its status and message after Retry.Attempts requests; a
// Retry-After above MaxRetryAfter ends it at once.
func TestRetriesBounded(t *testing.T) {
	cases := []struct {
		name     string
		fail     http.HandlerFunc
		attempts int
		status   int
		after    time.Duration
	}{
		{"503 always", status(503), tinyRetry.Attempts, 503, 0},
		{"429 Retry-After 120", status(429, "Retry-After", "120"), 1, 429, 120 * time.Second},
		{"hang up always", hangUp, tinyRetry.Attempts, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, base, seen := faulty(t, 1000, tc.fail)
			var r recorder
			_, err := r.client(render.OpenAIChat, true).Call(context.Background(), firstRequest(t, render.OpenAIChat, base))
			var pe *provider.Error
			if !errors.As(err, &pe) || !errors.Is(err, provider.ErrUnavailable) {
				t.Fatalf("err = %v, want a *provider.Error marked unavailable", err)
			}
			if pe.Status != tc.status || pe.Attempts != tc.attempts || int(seen.Load()) != tc.attempts || pe.RetryAfter != tc.after {
				t.Errorf("status %d attempts %d (requests %d) retry-after %v; want %d %d %v", pe.Status, pe.Attempts, seen.Load(), pe.RetryAfter, tc.status, tc.attempts, tc.after)
			}
			if tc.status != 0 && pe.Message != fmt.Sprintf("busy %d", tc.status) {
				t.Errorf("message %q, want the provider's", pe.Message)
			}
		})
	}
}

// A body the provider refuses (a dangling tool call, built by hand since
// the renderer never sends one) is a *provider.Error with status 400 and
// the provider's own message, not retried.
func TestRefused(t *testing.T) {
	bodies := map[render.API]struct{ body, msg string }{
		render.OpenAIChat: {`{"model":"capsule-sim/planner","messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{}"}}]}]}`,
			"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1 (param messages.[1].role)"},
		render.OpenAIResponses: {`{"model":"capsule-sim/planner","store":false,"input":[{"role":"user","content":"hi"},` +
			`{"type":"function_call","call_id":"call_1","name":"read_file","arguments":"{}"}]}`,
			"No tool output found for function call call_1."},
	}
	for api, tc := range bodies {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", api, stream), func(t *testing.T) {
				s, base, _ := faulty(t, 0, nil)
				req := firstRequest(t, api, base)
				req.Body = []byte(tc.body)
				var r recorder
				_, err := r.client(api, stream).Call(context.Background(), req)
				var pe *provider.Error
				if !errors.As(err, &pe) || !errors.Is(err, provider.ErrRefused) {
					t.Fatalf("err = %v, want a refused *provider.Error", err)
				}
				if pe.Status != 400 || pe.Message != tc.msg || pe.Type != "invalid_request_error" || pe.Attempts != 1 || len(s.Requests()) != 1 {
					t.Errorf("got %+v after %d requests; want 400 invalid_request_error %q after 1", pe, len(s.Requests()), tc.msg)
				}
			})
		}
	}
}

// Reasoning the simulator did not issue (its encrypted content altered
// in the journal) is refused: the check the tool loop relies on to show
// that the client kept what the next request must replay.
func TestAlteredReasoningRefused(t *testing.T) {
	l := runLoop(t, render.OpenAIResponses, true, loopRequest)
	tg := target(render.OpenAIResponses)
	c := newConvo(t, tg, loopRequest)
	for _, o := range l.resps[0].Events {
		if r, ok := o.Body.(journal.Reasoning); ok {
			r.Encrypted = alter(r.Encrypted)
			o.Body = r
		}
		c.add(o.Kind, o.Body)
	}
	tc := l.calls[0]
	c.add(journal.KindToolResult, journal.ToolResult{CallID: tc.CallID, Name: tc.Name, Content: runTool(t, tc.Name, tc.Arguments)})
	body, rep, err := wire.Render(c.events, tg)
	if err != nil || rep.ReasoningKept != 1 {
		t.Fatalf("render: %v (reasoning kept: %+v)", err, rep)
	}
	s, base, _ := faulty(t, 0, nil)
	req := firstRequest(t, render.OpenAIResponses, base)
	req.Body = body
	_, err = (&openai.Client{API: render.OpenAIResponses}).Call(context.Background(), req)
	var pe *provider.Error
	if !errors.As(err, &pe) || !errors.Is(err, provider.ErrRefused) || pe.Status != 400 || len(s.Requests()) != 1 ||
		!strings.Contains(pe.Message, reasoningID(l.resps[0])) {
		t.Fatalf("err = %v, want a refusal of the altered reasoning %s", err, reasoningID(l.resps[0]))
	}
}

// alter changes the first byte of s.
func alter(s string) string {
	if s[0] == 'x' {
		return "y" + s[1:]
	}
	return "x" + s[1:]
}

func reasoningID(r *provider.Response) string {
	for _, o := range r.Events {
		if b, ok := o.Body.(journal.Reasoning); ok {
			return b.ItemID
		}
	}
	return "(none)"
}
