package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
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

// transportError is a request that got no answer: the operation's own
// failure, without the URL the net/http error repeats.
func transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &provider.Error{Provider: "ollama", API: render.Ollama, Err: err}
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
