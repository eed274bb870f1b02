package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
)

// errUnexpectedEnd is the transport error of an answer cut short.
var errUnexpectedEnd = errors.New("ollama: answer ended before its done line")

// errInStream is the transport error of an error line inside a 200
// answer (the server failed while generating).
var errInStream = errors.New("ollama: error in answer")

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 1 << 20

// statusError is the *provider.Error of an answer other than 200: the
// status, Ollama's "error" text, and Retry-After.
func statusError(res *http.Response) error {
	pe := &provider.Error{Provider: "ollama", API: render.Ollama, Status: res.StatusCode,
		RetryAfter: provider.RetryAfter(res.Header, time.Now())}
	b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	var eb struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &eb) == nil {
		pe.Message = eb.Error
	}
	return pe
}

// transportError is a request that got no answer (provider.TransportError).
func transportError(err error) error { return provider.TransportError("ollama", render.Ollama, err) }

// finish is the error Call returns (provider.Finish).
func finish(ctx context.Context, err error, attempts int) error {
	return provider.Finish(ctx, "ollama", err, attempts)
}
