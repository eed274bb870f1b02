package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/memory"
	"github.com/agentcapsule/capsule/memory/remote"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/provider/sim"
)

// An endpoint that fails halfway (after 2 of 5 texts, a 500 that outlives
// the retries) fails the whole call with an error naming the provider,
// the model and the status, and no vectors.
func TestEndpointFailsHalfway(t *testing.T) {
	for _, p := range providers {
		t.Run(string(p), func(t *testing.T) {
			s := serve(t, sim.Config{})
			s.SetEmbedFaults(sim.EmbedFaults{Status: 500, FailAfter: 2})
			got, err := embedder(t, p, s.URL, func(c *remote.Config) { c.Batch = 2 }).Embed(context.Background(), texts)
			var pe *provider.Error
			if got != nil || !errors.As(err, &pe) || pe.Status != 500 || pe.Attempts != fastRetry.Attempts || !errors.Is(err, provider.ErrUnavailable) {
				t.Fatalf("got %d vectors, err %v; want none and a 500 after %d attempts", len(got), err, fastRetry.Attempts)
			}
			for _, want := range []string{"remote: " + string(p), sim.Embed, "HTTP 500"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			if n := s.EmbeddedTexts(); n != 2 {
				t.Errorf("%d texts embedded before the failure, want 2", n)
			}
		})
	}
}

// A 503 that clears is retried and the call succeeds.
func TestRetriesTransientStatus(t *testing.T) {
	s := serve(t, sim.Config{})
	s.SetEmbedFaults(sim.EmbedFaults{Status: 503, Times: 1})
	got, err := embedder(t, remote.OpenAI, s.URL, nil).Embed(context.Background(), texts)
	if err != nil || len(got) != len(texts) {
		t.Fatalf("err %v, %d vectors", err, len(got))
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (one retry)", n)
	}
}

// A Retry-After beyond Config.Retry.MaxRetryAfter ends the call at once
// with the provider's 429 and its Retry-After, for every provider.
func TestRetryAfterTooLong(t *testing.T) {
	for _, p := range providers {
		s := serve(t, sim.Config{})
		s.SetEmbedFaults(sim.EmbedFaults{Status: 429, RetryAfter: "5"})
		_, err := embedder(t, p, s.URL, nil).Embed(context.Background(), texts)
		var pe *provider.Error
		if !errors.As(err, &pe) || pe.Status != 429 || pe.RetryAfter != 5*time.Second || len(s.Requests()) != 1 {
			t.Errorf("%s: err = %v after %d requests, want a 429 with Retry-After 5s after 1", p, err, len(s.Requests()))
		}
	}
}

// A text the provider refuses alone (OpenAI: past 8192 tokens) and an
// empty text are reported by index in an EmbedError; the others are
// embedded, the refused batch bisected to find the text.
func TestTextsRefusedIndividually(t *testing.T) {
	s := serve(t, sim.Config{})
	in := append([]string(nil), texts...)
	in[1] = strings.Repeat("word ", 7000) // 35,000 bytes: 8,750 of the simulator's tokens
	in[3] = ""
	got, err := embedder(t, remote.OpenAI, s.URL, nil).Embed(context.Background(), in)
	var ee *memory.EmbedError
	if !errors.As(err, &ee) || len(ee.Failed) != 2 || ee.Failed[1] == nil || ee.Failed[3] == nil {
		t.Fatalf("err = %v, want an EmbedError for texts 1 and 3", err)
	}
	if !strings.Contains(ee.Failed[1].Error(), "maximum input length is 8192 tokens") || !errors.Is(ee.Failed[1], provider.ErrRefused) {
		t.Errorf("text 1: %v", ee.Failed[1])
	}
	for i, v := range got {
		if (i == 1 || i == 3) != (v == nil) {
			t.Errorf("vector %d: %d values", i, len(v))
		}
	}
	// [0 1 2 4] refused; [0 1] refused; [0] ok; [1] refused; [2 4] ok.
	if n := len(s.Requests()); n != 5 {
		t.Errorf("%d requests, want 5", n)
	}
}

// A request the provider refuses whatever its texts (dimensions the
// model does not serve) fails the whole call after a few requests, not
// one per text.
func TestRequestRefusedWhole(t *testing.T) {
	s := serve(t, sim.Config{})
	many := make([]string, 64)
	for i := range many {
		many[i] = fmt.Sprintf("text %d", i)
	}
	got, err := embedder(t, remote.OpenAI, s.URL, func(c *remote.Config) { c.Dims = sim.EmbedDims + 1 }).Embed(context.Background(), many)
	var ee *memory.EmbedError
	if got != nil || err == nil || errors.As(err, &ee) || !errors.Is(err, provider.ErrRefused) || !strings.Contains(err.Error(), "HTTP 400") {
		t.Fatalf("err = %v, want a whole-call 400", err)
	}
	if n := len(s.Requests()); n > 8 {
		t.Errorf("%d requests for a refused request of 64 texts, want at most log2(64)+2", n)
	}
}

// A model the provider does not serve fails the call at once, in its
// words, naming the model.
func TestUnknownModel(t *testing.T) {
	want := map[remote.Provider]string{remote.OpenAI: "does not exist", remote.Gemini: "is not found", remote.Ollama: "not found"}
	for _, p := range providers {
		s := serve(t, sim.Config{})
		e := embedder(t, p, s.URL, func(c *remote.Config) { c.Model, c.Dims = "no-such-embedder", 8 })
		_, err := e.Embed(context.Background(), texts)
		if !errors.Is(err, provider.ErrRefused) || !strings.Contains(err.Error(), "HTTP 404") || !strings.Contains(err.Error(), want[p]) ||
			!strings.Contains(err.Error(), "no-such-embedder") || len(s.Requests()) != 1 {
			t.Errorf("%s: err = %v after %d requests", p, err, len(s.Requests()))
		}
	}
}

// A malformed answer is refused with an error naming the provider and
// what was wrong.
func TestMalformedAnswers(t *testing.T) {
	want := map[sim.Corruption]string{sim.CorruptTruncate: "", sim.CorruptShort: "vector 0 has 767 values, want 768",
		sim.CorruptNaN: "", sim.CorruptCount: "4 vectors for 5 texts"}
	nan := map[remote.Provider]string{remote.OpenAI: "value 0 is NaN", remote.Gemini: "decode", remote.Ollama: "decode"}
	for _, p := range providers {
		for c, w := range want {
			s := serve(t, sim.Config{})
			s.SetEmbedFaults(sim.EmbedFaults{Corrupt: c})
			if c == sim.CorruptNaN {
				w = nan[p]
			}
			got, err := embedder(t, p, s.URL, nil).Embed(context.Background(), texts)
			if got != nil || !errors.Is(err, remote.ErrMalformed) || !strings.Contains(err.Error(), string(p)+": malformed answer") || !strings.Contains(err.Error(), w) {
				t.Errorf("%s %s: err = %v, want a malformed answer with %q", p, c, err, w)
			}
		}
	}
}

// A cancelled context ends the call: before the first request, and
// during the wait before a retry.
func TestContextCancel(t *testing.T) {
	s := serve(t, sim.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := embedder(t, remote.OpenAI, s.URL, nil).Embed(ctx, texts); !errors.Is(err, context.Canceled) || len(s.Requests()) != 0 {
		t.Fatalf("err = %v after %d requests, want context.Canceled and none", err, len(s.Requests()))
	}
	for _, p := range providers {
		ctx, cancel := context.WithCancel(context.Background())
		s := serve(t, sim.Config{OnRequest: func(sim.Request) { cancel() }})
		s.SetEmbedFaults(sim.EmbedFaults{Status: 503})
		slow := provider.Retry{Attempts: 5, Base: time.Hour, Max: time.Hour, MaxRetryAfter: time.Hour}
		_, err := embedder(t, p, s.URL, func(c *remote.Config) { c.Retry = slow }).Embed(ctx, texts)
		if !errors.Is(err, context.Canceled) || len(s.Requests()) != 1 {
			t.Errorf("%s: err = %v after %d requests, want context.Canceled after 1", p, err, len(s.Requests()))
		}
		cancel()
	}
}

// Cancelling a request in flight (the endpoint holds it) ends the call
// with the context's error, for every provider.
func TestCancelInFlight(t *testing.T) {
	for _, p := range providers {
		hold := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		s := serve(t, sim.Config{})
		s.SetEmbedFaults(sim.EmbedFaults{Hold: hold})
		e := embedder(t, p, s.URL, nil)
		done := make(chan error, 1)
		go func() {
			_, err := e.Embed(ctx, texts)
			done <- err
		}()
		for s.EmbeddedTexts() == 0 { // admitted: the request is held
			time.Sleep(time.Millisecond)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", p, err)
		}
		close(hold)
	}
}

// The key never appears in an error or a log line: not when the provider
// quotes it in a refusal, not in a status, transport, malformed or
// cancelled failure, not in a per-text refusal.
func TestKeyNeverLeaks(t *testing.T) {
	var logs bytes.Buffer
	log.SetOutput(&logs)
	t.Cleanup(func() { log.SetOutput(nil) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	faults := []sim.EmbedFaults{{Unauthorized: true}, {Status: 500}, {Status: 429}, {Corrupt: sim.CorruptTruncate}, {Corrupt: sim.CorruptNaN}}
	var errs []error
	for _, p := range providers {
		for _, f := range faults {
			s := serve(t, sim.Config{})
			s.SetEmbedFaults(f)
			_, err := embedder(t, p, s.URL, nil).Embed(context.Background(), texts)
			if f.Unauthorized && !strings.Contains(err.Error(), "[redacted key]") {
				t.Errorf("%s: %v, want the quoted key redacted", p, err)
			}
			errs = append(errs, err)
		}
		_, err := embedder(t, p, closed, nil).Embed(context.Background(), texts)
		errs = append(errs, err)
		s := serve(t, sim.Config{})
		_, err = embedder(t, p, s.URL, nil).Embed(context.Background(), []string{"ok", strings.Repeat("word ", 7000), ""})
		errs = append(errs, err)
	}
	for i, err := range errs {
		if err == nil {
			t.Errorf("case %d: no error", i)
			continue
		}
		text := fmt.Sprintf("%v %+v %#v %s", err, err, err, err)
		var ee *memory.EmbedError
		if errors.As(err, &ee) {
			for _, f := range ee.Failed {
				text += f.Error()
			}
		}
		if strings.Contains(text, testKey) {
			t.Errorf("case %d: the key leaked: %s", i, text)
		}
	}
	if strings.Contains(logs.String(), testKey) {
		t.Errorf("the key leaked into the log: %s", logs.String())
	}
}
