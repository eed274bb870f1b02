package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
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

// transportError is a request that got no answer (provider.TransportError).
func transportError(err error) error { return provider.TransportError("google", render.Gemini, err) }

// finish is the error Call returns (provider.Finish).
func finish(ctx context.Context, err error, attempts int) error {
	return provider.Finish(ctx, "gemini", err, attempts)
}
