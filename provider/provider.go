// Package provider is the seam between the agent loop and the model HTTP
// clients in provider/<name> (provider/openai for Chat Completions and
// Responses, provider/anthropic, provider/gemini, provider/ollama), each
// built on the provider's official SDK.
//
// A client sends exactly the body the renderer produced (render/wire): it
// never translates a request a second time. It streams the answer, hands
// the text to watchers as it arrives, and parses the whole generation back
// into journal bodies (the inverse of rendering), keeping what the next
// render must replay to the same model: signatures, encrypted reasoning,
// provider item IDs, Gemini thought signatures, parallel calls, the stop
// reason and usage.
//
// The key is resolved by the caller at the moment of each call and passed
// in Request.Key; a client never reads a secret store, never logs a key,
// and never puts one in an error.
package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
)

// Request is one model call.
type Request struct {
	// API is the wire format Body is in.
	API render.API
	// Model is the provider's model name (Body names it too, where the API
	// puts the model in the body).
	Model string
	// Producer is the journal producer the output is attributed to
	// (render.Target.Producer of the target Body was rendered for).
	Producer journal.Producer
	// Step is the journal step ID every event of the answer carries.
	Step string
	// Body is the request body exactly as rendered. A client may set the
	// streaming switch the API keeps in the body ("stream") and nothing
	// else.
	Body []byte
	// BaseURL is where the API is served, e.g. "http://127.0.0.1:8080/v1"
	// for an OpenAI-compatible server; empty means the provider's public
	// endpoint. Each client documents the form it expects.
	BaseURL string
	// Key is the API key for this call, resolved from the host's secret
	// store just before it; empty when the endpoint takes none.
	Key string
	// OnText, when set, receives assistant text as it is generated (for
	// watchers). What it is given is shown, never journaled: the journal
	// gets the whole text once generation completes.
	OnText func(delta string)
	// Retry bounds retries on 429, 5xx and dropped connections; the zero
	// value means DefaultRetry.
	Retry Retry
}

// Output is one journal event an answer produced: Kind is
// journal.KindReasoning, KindAssistant, KindToolCall or KindUsage, and
// Body is the matching journal body (journal.Reasoning, ...), with
// Producer and Step set from the Request.
type Output struct {
	Kind journal.Kind
	Body any
}

// Response is one whole generation.
type Response struct {
	// Events is what the generation produced, in order: reasoning and text
	// as they came, tool calls (several for parallel calls), and the usage
	// last when the provider reported it. Tool names and call IDs are as
	// the model sent them; the caller maps them back to the journal's
	// (render.Report.JournalToolName, JournalCallID).
	Events []Output
	// StopReason is the provider's stop reason as it spelled it
	// ("stop", "tool_calls", "end_turn", "tool_use", "STOP", ...).
	StopReason string
	// Attempts is how many HTTP requests the call took (1 without retries).
	Attempts int
}

// Client calls one model API.
type Client interface {
	Call(ctx context.Context, req *Request) (*Response, error)
}

// Retry bounds the retries of one call.
type Retry struct {
	// Attempts is the most requests one call makes (at least 1).
	Attempts int
	// Base and Max bound the backoff between attempts (doubling from Base);
	// a Retry-After the provider sends is honoured when it is at most
	// MaxRetryAfter, else the call fails with the provider's error.
	Base, Max     time.Duration
	MaxRetryAfter time.Duration
}

// DefaultRetry is used when Request.Retry is the zero value.
var DefaultRetry = Retry{Attempts: 4, Base: 500 * time.Millisecond, Max: 8 * time.Second, MaxRetryAfter: 60 * time.Second}

// OrDefault returns r, or DefaultRetry when r is the zero value.
func (r Retry) OrDefault() Retry {
	if r.Attempts <= 0 {
		return DefaultRetry
	}
	return r
}

// ErrRefused marks an error the provider gave for the request itself (a
// 4xx other than 408 and 429: a body it will not take, a key it does not
// accept, a model it does not serve). Sending the same request again
// cannot succeed, so the agent stops with a blocked state instead of
// retrying.
var ErrRefused = errors.New("provider: request refused")

// ErrUnavailable marks an error that outlived the retries: 429, 5xx, 408,
// or a connection that dropped.
var ErrUnavailable = errors.New("provider: unavailable")

// Error is a provider's answer that was not a generation. Message is the
// provider's own error message; it never holds the key (the caller scrubs
// every resolved secret from it as well).
type Error struct {
	Provider   string        // "openai", "anthropic", "google", "ollama"
	API        render.API    // the wire format called
	Status     int           // the HTTP status, 0 for a connection error
	Type       string        // the provider's error type or code, if it sent one
	Message    string        // the provider's error message
	RetryAfter time.Duration // the provider's Retry-After, if it sent one
	Attempts   int           // requests made
	Err        error         // the transport error, for Status 0
}

// Error names the provider, the status and the provider's message.
func (e *Error) Error() string {
	s := "provider " + e.Provider + " (" + string(e.API) + ")"
	if e.Status != 0 {
		s += ": HTTP " + strconv.Itoa(e.Status)
	}
	if e.Type != "" {
		s += " " + e.Type
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return s
}

// Unwrap lets errors.Is find ErrRefused or ErrUnavailable, and the
// transport error.
func (e *Error) Unwrap() []error {
	var out []error
	if e.Refused() {
		out = append(out, ErrRefused)
	} else {
		out = append(out, ErrUnavailable)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// Refused reports whether the status says the request itself was refused.
func (e *Error) Refused() bool {
	return e.Status >= 400 && e.Status < 500 && e.Status != 408 && e.Status != 429
}

// Retryable reports whether a status is worth another attempt.
func Retryable(status int) bool {
	return status == 408 || status == 429 || status >= 500
}

// CallID is the ID given to the index-th call (from 0) of a step when the
// model sent none (Gemini and older Ollama servers send none): "call_" and
// 24 hex digits of the SHA-256 of the step and index, so it is stable (a
// repeated step gets the same IDs), unique per journal, and valid under
// every API's call-ID syntax.
func CallID(step string, index int) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", step, index))
	return "call_" + hex.EncodeToString(h[:12])
}
