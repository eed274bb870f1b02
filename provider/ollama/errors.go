package ollama

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
)

// errUnexpectedEnd is the transport error of an answer cut short.
var errUnexpectedEnd = errors.New("ollama: unexpected end of answer")

// callError turns what the client returned into a *provider.Error: the
// status and Ollama's "error" text, with the Retry-After of the response.
// An error line inside a 200 stream, or a transport error, has status 0.
func callError(err error, h http.Header) error {
	pe := &provider.Error{Provider: "ollama", API: render.Ollama}
	var se api.StatusError
	var ae api.AuthorizationError
	switch {
	case errors.As(err, &se):
		pe.Status, pe.Message = se.StatusCode, se.ErrorMessage
	case errors.As(err, &ae):
		pe.Status, pe.Message = ae.StatusCode, http.StatusText(ae.StatusCode)
	default:
		pe.Err = err
	}
	if pe.Status != 0 {
		pe.RetryAfter = provider.RetryAfter(h, time.Now())
	}
	return pe
}

// finish is the error Call returns: the context's error when the call
// was cancelled or timed out, else the provider error with the number of
// attempts made.
func finish(ctx context.Context, err error, attempts int) error {
	if ctx.Err() != nil {
		return fmt.Errorf("ollama: call: %w", ctx.Err())
	}
	var pe *provider.Error
	if errors.As(err, &pe) {
		pe.Attempts = attempts
	}
	return err
}
