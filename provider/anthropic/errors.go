package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
)

// streamStatus is the HTTP status an error event inside a stream stands
// for (the stream itself answered 200), by Anthropic's error type.
var streamStatus = map[string]int{"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500}

// errStreamEvent is the transport error of an error event inside a stream
// whose type names no status.
var errStreamEvent = errors.New("anthropic: error event in stream")

// callError turns what the SDK returned into a *provider.Error: the
// status, Anthropic's error type and message, and its Retry-After. The
// SDK's own error text (URL and raw body) is not kept.
func callError(err error) error {
	var ae *anthropic.Error
	if !errors.As(err, &ae) {
		return &provider.Error{Provider: "anthropic", API: render.Anthropic, Err: err}
	}
	pe := &provider.Error{Provider: "anthropic", API: render.Anthropic, Status: ae.StatusCode}
	pe.Type, pe.Message = errorBody(ae.RawJSON())
	if ae.Response != nil {
		pe.RetryAfter = provider.RetryAfter(ae.Response.Header, time.Now())
	}
	if pe.Status < 400 {
		pe.Status = streamStatus[pe.Type]
		if pe.Status == 0 {
			pe.Err = errStreamEvent
		}
	}
	return pe
}

// errorBody reads {"type":"error","error":{"type":...,"message":...}}.
func errorBody(raw string) (typ, msg string) {
	var b struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &b) != nil {
		return "", ""
	}
	return b.Error.Type, b.Error.Message
}

// finish is the error Call returns: the context's error when the call
// was cancelled or timed out, else the provider error with the number of
// attempts made.
func finish(ctx context.Context, err error, attempts int) error {
	if ctx.Err() != nil {
		return fmt.Errorf("anthropic: call: %w", ctx.Err())
	}
	var pe *provider.Error
	if errors.As(err, &pe) {
		pe.Attempts = attempts
	}
	return err
}
