package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"google.golang.org/genai"

	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
)

// errUnexpectedEnd is the transport error of an answer cut short.
var errUnexpectedEnd = errors.New("gemini: stream ended before a finish reason")

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 1 << 20

// errorBody is Gemini's error answer, {"error":{code, message, status}}.
type errorBody struct {
	Error *genai.APIError `json:"error"`
}

// statusError is the *provider.Error of an answer other than 200:
// Gemini's status (e.g. INVALID_ARGUMENT) and message, and Retry-After.
func statusError(res *http.Response) error {
	pe := &provider.Error{Provider: "google", API: render.Gemini, Status: res.StatusCode,
		RetryAfter: provider.RetryAfter(res.Header, time.Now())}
	b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	var eb errorBody
	if json.Unmarshal(b, &eb) == nil && eb.Error != nil {
		pe.Type, pe.Message = eb.Error.Status, eb.Error.Message
	}
	return pe
}

// transportError is a request that got no answer. The URL holds no key,
// but the error is unwrapped from url.Error all the same, so only the
// operation's own failure is kept.
func transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &provider.Error{Provider: "google", API: render.Gemini, Err: err}
}

// finish is the error Call returns: the context's error when the call
// was cancelled or timed out, else the provider error with the number of
// attempts made.
func finish(ctx context.Context, err error, attempts int) error {
	if ctx.Err() != nil {
		return fmt.Errorf("gemini: call: %w", ctx.Err())
	}
	var pe *provider.Error
	if errors.As(err, &pe) {
		pe.Attempts = attempts
	}
	return err
}
